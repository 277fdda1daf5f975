;; badptr: hands output_write a buffer outside its memory; the host must trap
;; the call, not read out of bounds.
(module
  (import "mcpf" "output_write" (func $output_write (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_filter") (result i32)
    (drop (call $output_write (i32.const 65000) (i32.const 1000)))
    (i32.const 0)))
