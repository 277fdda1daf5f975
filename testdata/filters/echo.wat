;; echo: test guest. The first input byte is the status to return; the rest is
;; written with output_write (status 0/1/other) or error_set (status 2/3).
;; Empty input: status 1 (pass).
(module
  (import "mcpf" "input_len" (func $input_len (result i32)))
  (import "mcpf" "input_read" (func $input_read (param i32 i32 i32) (result i32)))
  (import "mcpf" "output_write" (func $output_write (param i32 i32) (result i32)))
  (import "mcpf" "error_set" (func $error_set (param i32 i32)))
  (memory (export "memory") 1)
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_filter") (result i32)
    (local $n i32) (local $s i32) (local $need i32)
    (local.set $n (call $input_len))
    (if (i32.eqz (local.get $n)) (then (return (i32.const 1))))
    (local.set $need (i32.shr_u (i32.add (local.get $n) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.lt_s (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const 0))
          (then (unreachable)))))
    (drop (call $input_read (i32.const 0) (i32.const 0) (local.get $n)))
    (local.set $s (i32.load8_u (i32.const 0)))
    (if (i32.or (i32.eq (local.get $s) (i32.const 2)) (i32.eq (local.get $s) (i32.const 3)))
      (then (call $error_set (i32.const 1) (i32.sub (local.get $n) (i32.const 1))))
      (else (drop (call $output_write (i32.const 1) (i32.sub (local.get $n) (i32.const 1))))))
    (local.get $s)))
