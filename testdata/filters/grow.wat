;; grow: grows memory 64 pages (4 MiB) at a time until memory.grow fails at the cap,
;; then traps.
(module
  (memory (export "memory") 1)
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_filter") (result i32)
    (loop $more
      (br_if $more (i32.ge_s (memory.grow (i32.const 64)) (i32.const 0))))
    (unreachable)))
