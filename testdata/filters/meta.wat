;; meta: test guest. Writes the call's meta document (meta_read) as its
;; output, read twice (the second read must give the same bytes), each read
;; into its own buffer; status 3 (error) if the reads differ.
(module
  (import "mcpf" "meta_read" (func $meta_read (param i32 i32) (result i32)))
  (import "mcpf" "output_write" (func $output_write (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_filter") (result i32)
    (local $n i32) (local $m i32) (local $i i32)
    (local.set $n (call $meta_read (i32.const 0) (i32.const 30000)))
    (local.set $m (call $meta_read (i32.const 32768) (i32.const 30000)))
    (if (i32.ne (local.get $n) (local.get $m)) (then (return (i32.const 3))))
    (if (i32.gt_u (local.get $n) (i32.const 30000)) (then (return (i32.const 3))))
    (block $done
      (loop $cmp
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.ne (i32.load8_u (local.get $i)) (i32.load8_u (i32.add (local.get $i) (i32.const 32768))))
          (then (return (i32.const 3))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $cmp)))
    (drop (call $output_write (i32.const 0) (local.get $n)))
    (i32.const 0)))
