;;;; Numbers: arithmetic, comparison, rounding, powers, logarithms, trigonometry,
;;;; bitwise operations, random, parse-integer, coerce. Expected values are what
;;;; SBCL prints (*read-default-float-format* 'double-float), except where
;;;; language.md lists a deliberate difference (no ratios or bignums, no complex
;;;; numbers, every float a double, E-DIV-ZERO for float division by zero).


;;; + - * / and contagion
(+)
;=> 0
(+ 5)
;=> 5
(+ 1 2 3 4)
;=> 10
(+ 1 2.5)
;=> 3.5
(+ 0.1 0.2)
;=> 0.30000000000000004
(+ -0.0 0)
;=> 0.0
(+ 9223372036854775807 -1)
;=> 9223372036854775806
(+ 9223372036854775807 1)
;!E-OVERFLOW
(+ -9223372036854775808 -1)
;!E-OVERFLOW
(+ 1 "a")
;!E-TYPE
(+ 'a)
;!E-TYPE
(+ 1 nil)
;!E-TYPE
(-)
;!E-ARITY
(- 5)
;=> -5
(- -2.5)
;=> 2.5
(- 0.0)
;=> -0.0
(- -9223372036854775808)
;!E-OVERFLOW
(- 10 1 2 3)
;=> 4
(- 1 0.5)
;=> 0.5
(- -9223372036854775808 1)
;!E-OVERFLOW
(- 1 'x)
;!E-TYPE
(*)
;=> 1
(* 7)
;=> 7
(* 2 3 4)
;=> 24
(* 2 2.5)
;=> 5.0
(* -1 0.0)
;=> -0.0
(* 4294967296 4294967296)
;!E-OVERFLOW
(* 3037000499 3037000499)
;=> 9223372030926249001
(* -9223372036854775808 -1)
;!E-OVERFLOW
(* 1e300 1e300)
;!E-OVERFLOW
(* 1e-300 1e-300)
;=> 0.0
(* 2 #\a)
;!E-TYPE
(/ 6 3)
;=> 2
(/ 12 2 3)
;=> 2
(/ 1 3)
;=> 0.3333333333333333
(/ -7 2)
;=> -3.5
(/ 2)
;=> 0.5
(/ -1)
;=> -1
(/ 1)
;=> 1
(/ 0.5)
;=> 2.0
(/ 1.0 4)
;=> 0.25
(/ 0)
;!E-DIV-ZERO
(/ 0.0)
;!E-DIV-ZERO
(/ 'a)
;!E-TYPE
(/ 1 0)
;!E-DIV-ZERO
(/ 1.0 0)
;!E-DIV-ZERO
(/ 1 0.0)
;!E-DIV-ZERO
(/ 0.0 0.0)
;!E-DIV-ZERO
(/ -9223372036854775808 -1)
;!E-OVERFLOW
(/ -9223372036854775808 2)
;=> -4611686018427387904
(/ 1e300 1e-300)
;!E-OVERFLOW
(/ 9 "3")
;!E-TYPE
(1+ 1)
;=> 2
(1+ 1.5)
;=> 2.5
(1- 0)
;=> -1
(1- -0.5)
;=> -1.5
(1+ 9223372036854775807)
;!E-OVERFLOW
(1- -9223372036854775808)
;!E-OVERFLOW
(1+ 'a)
;!E-TYPE

;;; comparisons (n-ary, exact between integers and floats)
(= 1)
;=> t
(= 1 1 1)
;=> t
(= 1 1.0)
;=> t
(= 1 2)
;=> nil
(= 0.0 -0.0)
;=> t
(= 9007199254740993 9007199254740992.0)
;=> nil
(= 9007199254740992 9007199254740992.0)
;=> t
(< 9007199254740992.0 9007199254740993)
;=> t
(> 9223372036854775807 9.223372036854775807e18)
;=> nil
(< 9223372036854775807 9.223372036854775807e18)
;=> t
(< -9223372036854775808 -9.223372036854775808e18)
;=> nil
(= -9223372036854775808 -9.223372036854775808e18)
;=> t
(= 'a)
;!E-TYPE
(= 1 2 'a)
;!E-TYPE
(< 2 1 'a)
;!E-TYPE
(< 1)
;=> t
(< 1 2 3)
;=> t
(< 1 2 2)
;=> nil
(<= 1 2 2)
;=> t
(> 3 2 1)
;=> t
(> 3 3)
;=> nil
(>= 3 3 1)
;=> t
(>= 1 2)
;=> nil
(< 0.5 1 1.5)
;=> t
(<= -1 -0.5 0)
;=> t
(/= 1)
;=> t
(/= 1 2 3)
;=> t
(/= 1 2 1)
;=> nil
(/= 1 1.0)
;=> nil
(/= 1.0 2.0 3)
;=> t
(< 1 #\a)
;!E-TYPE

;;; min max abs signum
(max 1)
;=> 1
(max 1 3 2)
;=> 3
(max 3 2.0)
;=> 3
(max 1.0 1)
;=> 1.0
(max 1 1.0)
;=> 1
(max 2 3.0 3)
;=> 3.0
(min 3 1 2)
;=> 1
(min 1 1.0)
;=> 1
(min 1.0 1)
;=> 1.0
(min -0.5 -1)
;=> -1
(max 1 2 'a)
;!E-TYPE
(max 'a)
;!E-TYPE
(max)
;!E-ARITY
(abs -5)
;=> 5
(abs 5)
;=> 5
(abs -0.0)
;=> 0.0
(abs -2.5)
;=> 2.5
(abs -9223372036854775808)
;!E-OVERFLOW
(abs 'a)
;!E-TYPE
(signum 5)
;=> 1
(signum -7)
;=> -1
(signum 0)
;=> 0
(signum -2.5)
;=> -1.0
(signum 0.0)
;=> 0.0
(signum -0.0)
;=> -0.0
(signum 'a)
;!E-TYPE

;;; floor ceiling truncate round: quotient and remainder
(floor 7 2)
;=> 3
;=> 1
(floor -7 2)
;=> -4
;=> 1
(floor 7 -2)
;=> -4
;=> -1
(floor -7 -2)
;=> 3
;=> -1
(ceiling 7 2)
;=> 4
;=> -1
(ceiling -7 2)
;=> -3
;=> -1
(ceiling 7 -2)
;=> -3
;=> 1
(ceiling -7 -2)
;=> 4
;=> 1
(truncate 7 2)
;=> 3
;=> 1
(truncate -7 2)
;=> -3
;=> -1
(truncate 7 -2)
;=> -3
;=> 1
(round 5 2)
;=> 2
;=> 1
(round 7 2)
;=> 4
;=> -1
(round -7 2)
;=> -4
;=> 1
(round -7 -2)
;=> 4
;=> 1
(round 7 -2)
;=> -4
;=> -1
(round 6 -4)
;=> -2
;=> -2
(round -6 4)
;=> -2
;=> 2
(round -10 4)
;=> -2
;=> -2
(round 9 3)
;=> 3
;=> 0
(floor 5)
;=> 5
;=> 0
(floor 1 0)
;!E-DIV-ZERO
(floor 5 0.0)
;!E-DIV-ZERO
(truncate -9223372036854775808 -1)
;!E-OVERFLOW
(floor 9223372036854775807 2)
;=> 4611686018427387903
;=> 1
(floor 2.5)
;=> 2
;=> 0.5
(floor -2.5)
;=> -3
;=> 0.5
(floor 5.5 2)
;=> 2
;=> 1.5
(floor -5.5 2)
;=> -3
;=> 0.5
(floor 2.0)
;=> 2
;=> 0.0
(floor -2.0)
;=> -2
;=> 0.0
(floor 1.0 0.1)
;=> 10
;=> 0.0
(floor 5 2.0)
;=> 2
;=> 1.0
(ceiling 5.5 2)
;=> 3
;=> -0.5
(ceiling -0.5)
;=> 0
;=> -0.5
(ceiling -0.0)
;=> 0
;=> -0.0
(ceiling 2.0)
;=> 2
;=> 0.0
(truncate -0.5)
;=> 0
;=> -0.5
(truncate 2.7)
;=> 2
;=> 0.7000000000000002
(truncate -2.7)
;=> -2
;=> -0.7000000000000002
(truncate 1e300)
;!E-OVERFLOW
(round 1e300 2)
;!E-OVERFLOW
(floor 1e300 1e-300)
;!E-OVERFLOW
(round 2.5)
;=> 2
;=> 0.5
(round 3.5)
;=> 4
;=> -0.5
(round -2.5)
;=> -2
;=> -0.5
(round 1.5)
;=> 2
;=> -0.5
(round -1.5)
;=> -2
;=> 0.5
(round 0.5)
;=> 0
;=> 0.5
(round -0.5)
;=> 0
;=> -0.5
(round 2.5 1)
;=> 2
;=> 0.5
(round 7.0 2)
;=> 4
;=> -1.0
(round 5.0 2)
;=> 2
;=> 1.0
(round 5.5 -2)
;=> -3
;=> -0.5
(round -7.5 2)
;=> -4
;=> 0.5
(round 3 1.5)
;=> 2
;=> 0.0
(round 2.5 0.5)
;=> 5
;=> 0.0
(round 'a)
;!E-TYPE
(floor 1 'a)
;!E-TYPE
(floor 1 2 3)
;!E-ARITY

;;; ffloor fceiling ftruncate fround
(ffloor 5 2)
;=> 2.0
;=> 1
(ffloor -5 2)
;=> -3.0
;=> 1
(fceiling 5 2)
;=> 3.0
;=> -1
(fround 7 2)
;=> 4.0
;=> -1
(fround 5 2)
;=> 2.0
;=> 1
(ffloor 5.5 2)
;=> 2.0
;=> 1.5
(ffloor -0.5)
;=> -1.0
;=> 0.5
(ffloor -0.0)
;=> -0.0
;=> 0.0
(ffloor 0.5)
;=> 0.0
;=> 0.5
(ffloor 0.2 -2)
;=> -1.0
;=> -1.8
(ftruncate -0.5)
;=> -0.0
;=> -0.5
(ftruncate -0.0)
;=> -0.0
;=> 0.0
(ftruncate 1e300)
;=> 1.0e300
;=> 0.0
(ftruncate -5.5 2)
;=> -2.0
;=> -1.5
(ftruncate 5 2.0)
;=> 2.0
;=> 1.0
(fceiling -0.5)
;=> -0.0
;=> -0.5
(fceiling 0.5)
;=> 1.0
;=> -0.5
(fceiling 0.0)
;=> 0.0
;=> 0.0
(fceiling -0.2 2)
;=> -0.0
;=> -0.2
(fround -0.4)
;=> 0.0
;=> -0.4
(fround -0.5)
;=> 0.0
;=> -0.5
(fround -0.6)
;=> -1.0
;=> 0.4
(fround -0.0)
;=> 0.0
;=> -0.0
(fround 2.5)
;=> 2.0
;=> 0.5
(fround 3.5)
;=> 4.0
;=> -0.5
(fround -2.5)
;=> -2.0
;=> -0.5
(fround 7.5 2)
;=> 4.0
;=> -0.5
(fround -4.0 8)
;=> 0.0
;=> -4.0
(fround -1e300)
;=> -1.0e300
;=> 0.0
(ffloor 1.0 0.1)
;=> 10.0
;=> 0.0
(ffloor 1 0)
;!E-DIV-ZERO

;;; mod rem
(mod -1 3)
;=> 2
(rem -1 3)
;=> -1
(mod 5 -3)
;=> -1
(rem 5 -3)
;=> 2
(mod -5 -3)
;=> -2
(mod 5.5 2)
;=> 1.5
(mod -5.5 2)
;=> 0.5
(rem -5.5 2)
;=> -1.5
(mod 5.0 -3)
;=> -1.0
(mod 0.1 0.01)
;=> 0.0
(rem 10.5 0.1)
;=> 0.0
(mod 1e300 3)
;=> 0.0
(mod 1e300 7.5)
;=> 0.0
(rem -9223372036854775808 -1)
;=> 0
(mod -0.0 1)
;=> -0.0
(rem -0.0 1)
;=> -0.0
(mod 1 0)
;!E-DIV-ZERO
(rem 1 0.0)
;!E-DIV-ZERO
(mod 'a 2)
;!E-TYPE
(mod 1)
;!E-ARITY

;;; expt
(expt 2 10)
;=> 1024
(expt -2 3)
;=> -8
(expt 0 0)
;=> 1
(expt 0 5)
;=> 0
(expt 5 0)
;=> 1
(expt 2 62)
;=> 4611686018427387904
(expt 2 63)
;!E-OVERFLOW
(expt -2 63)
;=> -9223372036854775808
(expt 3 40)
;!E-OVERFLOW
(expt 1 1000000)
;=> 1
(expt -1 1000001)
;=> -1
(expt 2 -3)
;=> 0.125
(expt 10 -2)
;=> 0.01
(expt -2 -2)
;=> 0.25
(expt 1 -5)
;=> 1
(expt -1 -3)
;=> -1
(expt 0 -1)
;!E-DIV-ZERO
(expt 0.0 0)
;=> 1.0
(expt 2.0 0)
;=> 1.0
(expt 2 0.0)
;=> 1.0
(expt 0 0.0)
;!E-DIV-ZERO
(expt 0.0 0.0)
;!E-DIV-ZERO
(expt 0.0 -1)
;!E-DIV-ZERO
(expt 0.0 -1.5)
;!E-DIV-ZERO
(expt 0.0 0.5)
;=> 0.0
(expt 0 2.5)
;=> 0.0
(expt 2.0 0.5)
;=> 1.4142135623730951
(expt 2 0.5)
;=> 1.4142135623730951
(expt 4 0.5)
;=> 2.0
(expt 1.5 2)
;=> 2.25
(expt 2.5 -2)
;=> 0.16
(expt 10.0 -2)
;=> 0.01
(expt -2.0 3)
;=> -8.0
(expt -2.0 2.0)
;=> 4.0
(expt -2 2.0)
;=> 4.0
(expt 1.1 10)
;=> 2.5937424601000023
(expt 2.0 1000)
;=> 1.0715086071862673e301
(expt 2.0 10000)
;!E-OVERFLOW
(expt -2.0 0.5)
;!E-UNSUPPORTED
(expt -8 (/ 1.0 3))
;!E-UNSUPPORTED
(expt 'a 2)
;!E-TYPE

;;; sqrt exp log
(sqrt 16.0)
;=> 4.0
(sqrt 4)
;=> 2.0
(sqrt 2)
;=> 1.4142135623730951
(sqrt 0)
;=> 0.0
(sqrt 2.0)
;=> 1.4142135623730951
(sqrt -0.0)
;=> -0.0
(sqrt -1)
;!E-UNSUPPORTED
(sqrt -4.0)
;!E-UNSUPPORTED
(sqrt "4")
;!E-TYPE
(exp 0)
;=> 1.0
(exp 1.0)
;=> 2.718281828459045
(exp -1000.0)
;=> 0.0
(exp 1000)
;!E-OVERFLOW
(log 1)
;=> 0.0
(log 2.718281828459045)
;=> 1.0
(log 1.0)
;=> 0.0
(log 8.0 2)
;=> 3.0
(log 8 2.0)
;=> 3.0
(log 100.0 10)
;=> 2.0
(log 100 10.0)
;=> 2.0
(log 1024.0 2)
;=> 10.0
(log 1000.0 10)
;=> 2.9999999999999996
(log 1000 10.0)
;=> 2.9999999999999996
(log 0)
;!E-DIV-ZERO
(log 0.0)
;!E-DIV-ZERO
(log 0 2)
;!E-DIV-ZERO
(log 10 0.0)
;=> 0.0
(log 0.0 0.0)
;=> 0.0
(log 2 1)
;!E-DIV-ZERO
(log 1.0 1.0)
;!E-DIV-ZERO
(log -1)
;!E-UNSUPPORTED
(log -1 2)
;!E-UNSUPPORTED
(log 2 -1)
;!E-UNSUPPORTED
(log 'e)
;!E-TYPE
(log)
;!E-ARITY

;;; trigonometric and hyperbolic functions
(sin 0)
;=> 0.0
(sin 1.0)
;=> 0.8414709848078965
(cos 0)
;=> 1.0
(cos 1.0)
;=> 0.5403023058681398
(tan 1.0)
;=> 1.5574077246549023
(sin pi)
;=> 1.2246467991473532e-16
(cos pi)
;=> -1.0
(asin 1.0)
;=> 1.5707963267948966
(asin -1.0)
;=> -1.5707963267948966
(acos 1)
;=> 0.0
(acos -1.0)
;=> 3.141592653589793
(acos 0.5)
;=> 1.0471975511965979
(asin 2)
;!E-UNSUPPORTED
(asin -1.5)
;!E-UNSUPPORTED
(acos 2)
;!E-UNSUPPORTED
(atan 1.0)
;=> 0.7853981633974483
(atan 1.0 0)
;=> 1.5707963267948966
(atan 0.0 0)
;=> 0.0
(atan 0.0 -1)
;=> 3.141592653589793
(atan -0.0 -1)
;=> -3.141592653589793
(atan 1.0 1.0)
;=> 0.7853981633974483
(atan -1.0 -1.0)
;=> -2.356194490192345
(atan 'a)
;!E-TYPE
(sinh 1.0)
;=> 1.1752011936438014
(cosh 1.0)
;=> 1.5430806348152437
(tanh 1.0)
;=> 0.7615941559557649
(tanh 1000.0)
;=> 1.0
(sinh 1000.0)
;!E-OVERFLOW
(asinh 1.0)
;=> 0.881373587019543
(acosh 1)
;=> 0.0
(acosh 2.0)
;=> 1.3169578969248166
(acosh 0.5)
;!E-UNSUPPORTED
(atanh 0.5)
;=> 0.5493061443340548
(atanh 1)
;!E-DIV-ZERO
(atanh 2.0)
;!E-UNSUPPORTED

;;; predicates
(zerop 0)
;=> t
(zerop 0.0)
;=> t
(zerop -0.0)
;=> t
(zerop 1)
;=> nil
(zerop 'a)
;!E-TYPE
(plusp 0)
;=> nil
(plusp 0.5)
;=> t
(minusp -0.0)
;=> nil
(minusp -1)
;=> t
(plusp nil)
;!E-TYPE
(evenp 2)
;=> t
(evenp 0)
;=> t
(evenp -3)
;=> nil
(oddp -3)
;=> t
(oddp -9223372036854775808)
;=> nil
(evenp 1.0)
;!E-TYPE
(oddp 'a)
;!E-TYPE
(numberp 1)
;=> t
(numberp 1.5)
;=> t
(numberp "1")
;=> nil
(integerp 1)
;=> t
(integerp 1.0)
;=> nil
(floatp 1.0)
;=> t
(floatp 1)
;=> nil
(realp 1)
;=> t
(realp 1.5)
;=> t
(realp #\1)
;=> nil
(rationalp 1)
;=> t
(rationalp 1.0)
;=> nil
(complexp 1)
;=> nil

;;; gcd lcm isqrt
(gcd)
;=> 0
(gcd -4)
;=> 4
(gcd 12 18)
;=> 6
(gcd 12 -18 8)
;=> 2
(gcd 0 0)
;=> 0
(gcd 0 5)
;=> 5
(gcd -9223372036854775808 6)
;=> 2
(gcd -9223372036854775808)
;!E-OVERFLOW
(gcd 1.0 2)
;!E-TYPE
(lcm)
;=> 1
(lcm 4)
;=> 4
(lcm -4 6)
;=> 12
(lcm 0 5)
;=> 0
(lcm 4 6 10)
;=> 60
(lcm 9223372036854775807 2)
;!E-OVERFLOW
(lcm 2 'a)
;!E-TYPE
(isqrt 0)
;=> 0
(isqrt 1)
;=> 1
(isqrt 17)
;=> 4
(isqrt 16)
;=> 4
(isqrt 9223372036854775807)
;=> 3037000499
(isqrt -1)
;!E-TYPE
(isqrt 4.0)
;!E-TYPE

;;; float and coerce
(float 1)
;=> 1.0
(float 1 1.0)
;=> 1.0
(float 1.5)
;=> 1.5
(float -3 0.0)
;=> -3.0
(float 1 2)
;!E-TYPE
(float 'a)
;!E-TYPE
(float 9223372036854775807 1.0)
;=> 9.223372036854776e18
(coerce 1 'float)
;=> 1.0
(coerce 1 'double-float)
;=> 1.0
(coerce 1 'single-float)
;=> 1.0
(coerce 2.5 'float)
;=> 2.5
(coerce 1 'real)
;=> 1
(coerce 1 'number)
;=> 1
(coerce 1 t)
;=> 1
(coerce 1 'integer)
;=> 1
(coerce 1.5 'integer)
;!E-TYPE
(coerce 1.5 'fixnum)
;!E-TYPE
(coerce 1 'complex)
;=> 1
(coerce 'a 'float)
;!E-TYPE
(coerce #\a 'character)
;=> #\a
(coerce "a" 'character)
;=> #\a
(coerce 'a 'character)
;=> #\A
(coerce "ab" 'character)
;!E-TYPE
(coerce "" 'character)
;!E-TYPE
(coerce 65 'character)
;!E-TYPE
(coerce '(#\a #\b) 'string)
;=> "ab"
(coerce #(#\a) 'string)
;=> "a"
(coerce '(#\a) 'base-string)
;=> "a"
(coerce '(#\a) '(vector character))
;=> "a"
(coerce '(1 2) 'string)
;!E-TYPE
(coerce "ab" 'list)
;=> (#\a #\b)
(coerce #(1 2) 'list)
;=> (1 2)
(coerce '(1 2) 'list)
;=> (1 2)
(coerce nil 'list)
;=> nil
(coerce 1 'list)
;!E-TYPE
(coerce '(1 2) 'vector)
;=> #(1 2)
(coerce nil 'vector)
;=> #()
(coerce "ab" 'simple-vector)
;=> #(#\a #\b)
(coerce "ab" '(vector t))
;=> #(#\a #\b)
(coerce '(1) '(simple-array t (*)))
;=> #(1)
(coerce '(1) '(array t (*)))
;=> #(1)
(coerce #(1 2) 'array)
;=> #(1 2)
(coerce "ab" 'array)
;=> "ab"
(coerce '(1) 'array)
;!E-TYPE
(coerce "ab" 'sequence)
;=> "ab"
(coerce 1 'sequence)
;!E-TYPE
(let ((s "abc")) (eq s (coerce s 'string)))
;=> t
(let ((v (vector 1 2))) (eq v (coerce v 'vector)))
;=> t
(let ((l (list 1 2))) (eq l (coerce l 'list)))
;=> t
(funcall (coerce 'car 'function) '(1 2))
;=> 1
(funcall (coerce '(lambda (x) (* x 2)) 'function) 21)
;=> 42
(coerce 'when 'function)
;!E-TYPE
(coerce '(1 . 2) 'vector)
;!E-TYPE

;;; parse-integer
(parse-integer "123")
;=> 123
;=> 3
(parse-integer " 12 ")
;=> 12
;=> 4
(parse-integer "-12")
;=> -12
;=> 3
(parse-integer "+12")
;=> 12
;=> 3
(parse-integer "  -0  ")
;=> 0
;=> 6
(parse-integer "ff" :radix 16)
;=> 255
;=> 2
(parse-integer "FF" :radix 16)
;=> 255
;=> 2
(parse-integer "-101" :radix 2)
;=> -5
;=> 4
(parse-integer "zz" :radix 36)
;=> 1295
;=> 2
(parse-integer "abc" :start 1 :radix 16)
;=> 188
;=> 3
(parse-integer "123" :end 2)
;=> 12
;=> 2
(parse-integer "x12y" :start 1 :end 3)
;=> 12
;=> 3
(parse-integer "123" :end nil)
;=> 123
;=> 3
(parse-integer " 12 x" :junk-allowed t)
;=> 12
;=> 3
(parse-integer "x" :junk-allowed t)
;=> nil
;=> 0
(parse-integer "  " :junk-allowed t)
;=> nil
;=> 2
(parse-integer "" :junk-allowed t)
;=> nil
;=> 0
(parse-integer "-" :junk-allowed t)
;=> nil
;=> 1
(parse-integer " -12x" :junk-allowed t)
;=> -12
;=> 4
(parse-integer "12 " :junk-allowed t)
;=> 12
;=> 2
(parse-integer "1 2" :junk-allowed t)
;=> 1
;=> 1
(parse-integer "9223372036854775807")
;=> 9223372036854775807
;=> 19
(parse-integer "-9223372036854775808")
;=> -9223372036854775808
;=> 20
(parse-integer "9223372036854775808")
;!E-OVERFLOW
(parse-integer "")
;!E-TYPE
(parse-integer "  ")
;!E-TYPE
(parse-integer "-")
;!E-TYPE
(parse-integer "12x")
;!E-TYPE
(parse-integer "12  3")
;!E-TYPE
(parse-integer "1.5")
;!E-TYPE
(parse-integer "12" :radix 1)
;!E-TYPE
(parse-integer "12" :radix 37)
;!E-TYPE
(parse-integer 12)
;!E-TYPE
(parse-integer "12" :start 3)
;!E-TYPE
(parse-integer "12" :bogus 1)
;!E-ARITY
(handler-case (parse-integer "x") (parse-error () :parse-error))
;=> :parse-error
(handler-case (parse-integer "x") (type-error () :type-error) (error () :error))
;=> :error
; Unicode decimal digits count, as in SBCL (digit-char-p agrees)
(parse-integer "١٢")
;=> 12
;=> 2
(parse-integer "x٣" :start 1)
;=> 3
;=> 2
(parse-integer "١٢" :radix 2)
;!E-TYPE

;;; random (seeded; values differ from SBCL's, so only properties are checked)
(let ((ok t)) (dotimes (i 2000 ok) (let ((r (random 10))) (unless (and (integerp r) (<= 0 r 9)) (setq ok nil)))))
;=> t
(let ((seen (make-array 10 :initial-element nil))) (dotimes (i 2000) (setf (aref seen (random 10)) t)) (every #'identity seen))
;=> t
(let ((ok t)) (dotimes (i 2000 ok) (let ((r (random 1.5))) (unless (and (floatp r) (<= 0 r) (< r 1.5)) (setq ok nil)))))
;=> t
(random 1)
;=> 0
(integerp (random 9223372036854775807))
;=> t
(random 0)
;!E-TYPE
(random -1)
;!E-TYPE
(random 0.0)
;!E-TYPE
(random -1.0)
;!E-TYPE
(random 'a)
;!E-TYPE

;;; bitwise operations
(logand)
;=> -1
(logior)
;=> 0
(logxor)
;=> 0
(logeqv)
;=> -1
(logand 12 10)
;=> 8
(logior 12 10)
;=> 14
(logxor 12 10)
;=> 6
(logeqv 5 3)
;=> -7
(logand 15 6 3)
;=> 2
(lognot 5)
;=> -6
(lognot -1)
;=> 0
(lognand 5 3)
;=> -2
(lognor 5 3)
;=> -8
(logandc1 5 3)
;=> 2
(logandc2 5 3)
;=> 4
(logorc1 5 3)
;=> -5
(logorc2 5 3)
;=> -3
(logtest 1 2)
;=> nil
(logtest 3 2)
;=> t
(logand 1.0 2)
;!E-TYPE
(ash 1 10)
;=> 1024
(ash 1 62)
;=> 4611686018427387904
(ash 1 63)
;!E-OVERFLOW
(ash -1 63)
;=> -9223372036854775808
(ash 3 62)
;!E-OVERFLOW
(ash 0 1000)
;=> 0
(ash 5 -1)
;=> 2
(ash -5 -1)
;=> -3
(ash -1 -100)
;=> -1
(ash 3 -65)
;=> 0
(ash 1 'a)
;!E-TYPE
(logcount 13)
;=> 3
(logcount -1)
;=> 0
(logcount -8)
;=> 3
(logcount 0)
;=> 0
(logbitp 2 4)
;=> t
(logbitp 1 4)
;=> nil
(logbitp 100 -1)
;=> t
(logbitp 63 -1)
;=> t
(logbitp 63 9223372036854775807)
;=> nil
(logbitp -1 4)
;!E-TYPE
(integer-length 0)
;=> 0
(integer-length -1)
;=> 0
(integer-length 8)
;=> 4
(integer-length -8)
;=> 3
(integer-length -9)
;=> 4
(integer-length 9223372036854775807)
;=> 63
(integer-length -9223372036854775808)
;=> 63

;;; numerator denominator realpart imagpart conjugate phase float-sign
(numerator 5)
;=> 5
(denominator 5)
;=> 1
(numerator 0.5)
;!E-TYPE
(denominator 'a)
;!E-TYPE
(realpart 5)
;=> 5
(realpart 2.5)
;=> 2.5
(imagpart 5)
;=> 0
(imagpart 5.0)
;=> 0.0
(imagpart -5.0)
;=> -0.0
(conjugate 2.5)
;=> 2.5
(phase -1)
;=> 3.141592653589793
(phase 1.0)
;=> 0.0
(phase -0.0)
;=> 3.141592653589793
(phase 2)
;=> 0.0
(float-sign -2.0)
;=> -1.0
(float-sign 2.0 -3.0)
;=> 3.0
(float-sign -0.0 3.0)
;=> -3.0
(float-sign 1)
;!E-TYPE
(realpart 'a)
;!E-TYPE

;;; constants
most-positive-fixnum
;=> 9223372036854775807
most-negative-fixnum
;=> -9223372036854775808
pi
;=> 3.141592653589793
most-positive-double-float
;=> 1.7976931348623157e308
(< 0 least-positive-double-float least-positive-normalized-double-float)
;=> t
(= least-positive-double-float (/ least-positive-normalized-double-float (expt 2 52)))
;=> t
(/ least-positive-double-float 2)
;=> 0.0
least-positive-normalized-double-float
;=> 2.2250738585072014e-308
double-float-epsilon
;=> 1.1102230246251568e-16
double-float-negative-epsilon
;=> 5.551115123125784e-17
(= 1.0 (+ 1.0 double-float-epsilon))
;=> nil
(= 1.0 (+ 1.0 (/ double-float-epsilon 2)))
;=> t
(= 1.0 (- 1.0 double-float-negative-epsilon))
;=> nil

;;; in context: numbers with other forms
(defun avg (&rest xs) (/ (apply #'+ xs) (length xs)))
(avg 1 2 3)
;=> 2
(avg 1 2)
;=> 1.5
(reduce #'max '(3 1 4 1 5 9 2 6))
;=> 9
(apply #'min '(3 1 4))
;=> 1
(mapcar #'1+ '(1 2.5 -3))
;=> (2 3.5 -2)
(sort (list 3 1.5 2) #'<)
;=> (1.5 2 3)
(multiple-value-list (floor 17 5))
;=> (3 2)
(multiple-value-bind (q r) (truncate 17 -5) (list q r))
;=> (-3 2)
(handler-case (/ 1 0) (division-by-zero () :caught))
;=> :caught
(handler-case (/ 1 0) (arithmetic-error () :caught))
;=> :caught
(handler-case (+ 1 'a) (type-error () :caught))
;=> :caught
(let ((x 0)) (dotimes (i 10) (incf x (* i i))) x)
;=> 285
(loop for i from 1 to 10 sum i)
;=> 55
(let ((x 10)) (decf x 2.5) x)
;=> 7.5
