;; loop: spins forever; the host must stop it at the deadline.
(module
  (memory (export "memory") 1)
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_filter") (result i32)
    (loop $forever (br $forever))
    (i32.const 0)))
