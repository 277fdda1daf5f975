;; splice: test guest for output_input. Its config is a JSON array: a string
;; of literal bytes (no escapes), then triples of integers (op, a, b):
;;   1 a 0  input_json_skip(a)
;;   2 a b  output_input(a, b)
;;   3 a b  output_write of the literal's bytes [a, b)
;; Output ops that return a negative code make the call fail (status 3);
;; otherwise the status is 0 (replace).
(module
  (import "mcpf" "config_read" (func $config_read (param i32 i32) (result i32)))
  (import "mcpf" "input_json_skip" (func $skip (param i32) (result i32)))
  (import "mcpf" "output_input" (func $output_input (param i32 i32) (result i32)))
  (import "mcpf" "output_write" (func $output_write (param i32 i32) (result i32)))
  (import "mcpf" "error_set" (func $error_set (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 8192) "an output op returned a negative code")
  (func (export "mcpf_abi_v1"))
  (func $arg (param $j i32) (result i32)
    (i32.load (i32.add (i32.const 4096) (i32.shl (local.get $j) (i32.const 2)))))
  (func (export "mcpf_filter") (result i32)
    (local $n i32) (local $i i32) (local $c i32)
    (local $k i32) (local $acc i32) (local $indig i32)
    (local $op i32) (local $a i32) (local $b i32)
    (local.set $n (call $config_read (i32.const 0) (i32.const 4096)))
    ;; the literal starts after `["`: find its closing quote
    (local.set $i (i32.const 2))
    (block $done (loop $q
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (br_if $done (i32.eq (i32.load8_u (local.get $i)) (i32.const 34)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $q)))
    ;; the numbers, as i32 at 4096..
    (block $end (loop $num
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $end (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $c (i32.load8_u (local.get $i)))
      (if (i32.and (i32.ge_u (local.get $c) (i32.const 48)) (i32.le_u (local.get $c) (i32.const 57)))
        (then
          (local.set $acc (i32.add (i32.mul (local.get $acc) (i32.const 10)) (i32.sub (local.get $c) (i32.const 48))))
          (local.set $indig (i32.const 1)))
        (else
          (if (local.get $indig) (then
            (i32.store (i32.add (i32.const 4096) (i32.shl (local.get $k) (i32.const 2))) (local.get $acc))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (local.set $acc (i32.const 0))
            (local.set $indig (i32.const 0))))))
      (br $num)))
    (local.set $i (i32.const 0))
    (block $out (loop $run
      (br_if $out (i32.gt_u (i32.add (local.get $i) (i32.const 3)) (local.get $k)))
      (local.set $op (call $arg (local.get $i)))
      (local.set $a (call $arg (i32.add (local.get $i) (i32.const 1))))
      (local.set $b (call $arg (i32.add (local.get $i) (i32.const 2))))
      (if (i32.eq (local.get $op) (i32.const 1))
        (then (drop (call $skip (local.get $a)))))
      (if (i32.eq (local.get $op) (i32.const 2))
        (then (if (i32.lt_s (call $output_input (local.get $a) (local.get $b)) (i32.const 0))
          (then (call $error_set (i32.const 8192) (i32.const 37)) (return (i32.const 3))))))
      (if (i32.eq (local.get $op) (i32.const 3))
        (then (if (i32.lt_s (call $output_write (i32.add (i32.const 2) (local.get $a)) (i32.sub (local.get $b) (local.get $a))) (i32.const 0))
          (then (call $error_set (i32.const 8192) (i32.const 37)) (return (i32.const 3))))))
      (local.set $i (i32.add (local.get $i) (i32.const 3)))
      (br $run)))
    (i32.const 0)))
