;; bigmem: declares 1024 initial pages (64 MiB), over the default cap.
(module
  (memory (export "memory") 1024)
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_filter") (result i32) (i32.const 1)))
