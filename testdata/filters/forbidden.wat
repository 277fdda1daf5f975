;; forbidden: imports a WASI filesystem function filters are not granted.
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_filter") (result i32) (i32.const 1)))
