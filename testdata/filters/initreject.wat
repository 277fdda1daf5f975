;; initreject: mcpf_init rejects any config.
(module
  (import "mcpf" "error_set" (func $error_set (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "budget too small")
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_init") (result i32)
    (call $error_set (i32.const 0) (i32.const 16))
    (i32.const 1))
  (func (export "mcpf_filter") (result i32) (i32.const 1)))
