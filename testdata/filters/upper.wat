;; upper: an mcpf v1 filter written without Go (mode text). It upper-cases the
;; ASCII letters of each text item. It shows the whole ABI a guest needs:
;; the mcpf_abi_v1 marker, memory, mcpf_filter, input_len/input_read and
;; output_write. The guest owns its memory; the host only copies into and out
;; of buffers the guest names.
(module
  (import "mcpf" "input_len" (func $input_len (result i32)))
  (import "mcpf" "input_read" (func $input_read (param i32 i32 i32) (result i32)))
  (import "mcpf" "output_write" (func $output_write (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_filter") (result i32)
    (local $n i32) (local $i i32) (local $c i32) (local $need i32)
    (local.set $n (call $input_len))
    ;; grow memory to hold the input (pages = ceil(n / 64 KiB))
    (local.set $need (i32.shr_u (i32.add (local.get $n) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.lt_s (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const 0))
          (then (return (i32.const 3))))))
    (drop (call $input_read (i32.const 0) (i32.const 0) (local.get $n)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $c (i32.load8_u (local.get $i)))
        (if (i32.and (i32.ge_u (local.get $c) (i32.const 97)) (i32.le_u (local.get $c) (i32.const 122)))
          (then (i32.store8 (local.get $i) (i32.sub (local.get $c) (i32.const 32)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    ;; status 0 = replace with what output_write copied; 3 = error
    (if (i32.lt_s (call $output_write (i32.const 0) (local.get $n)) (i32.const 0))
      (then (return (i32.const 3))))
    (i32.const 0)))
