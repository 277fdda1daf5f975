;; abiv2: declares a future ABI version.
(module
  (memory (export "memory") 1)
  (func (export "mcpf_abi_v2"))
  (func (export "mcpf_filter") (result i32) (i32.const 1)))
