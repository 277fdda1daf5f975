;; clock: reads the WASI monotonic and wall clocks; returns 1 (pass) if both
;; are the sandbox's fake clocks (monotonic near zero, wall clock before
;; 2023-01-01), else 3 (error).
(module
  (import "wasi_snapshot_preview1" "clock_time_get"
    (func $clock_time_get (param i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "mcpf_abi_v1"))
  (func (export "mcpf_filter") (result i32)
    ;; monotonic (id 1) into [0..8), realtime (id 0) into [8..16)
    (drop (call $clock_time_get (i32.const 1) (i64.const 1) (i32.const 0)))
    (drop (call $clock_time_get (i32.const 0) (i64.const 1) (i32.const 8)))
    (if (i64.ge_u (i64.load (i32.const 0)) (i64.const 1000000000))
      (then (return (i32.const 3))))
    (if (i64.ge_u (i64.load (i32.const 8)) (i64.const 1672531200000000000))
      (then (return (i32.const 3))))
    (i32.const 1)))
