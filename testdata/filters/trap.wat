;; trap: executes unreachable.
(module
  (memory (export "memory") 1)
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_filter") (result i32)
    (unreachable)))
