;; invalid: claims success (status 0) with output that is not an MCP result.
(module
  (import "mcpf" "output_write" (func $output_write (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"content\": \"not an array\"}")
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_filter") (result i32)
    (drop (call $output_write (i32.const 16) (i32.const 27)))
    (i32.const 0)))
