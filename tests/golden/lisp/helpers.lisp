;;;; Prelude helpers that are not CL: whitespacep, split-string, join, range,
;;;; product, sum-list, plist-keys (prelude/helpers.lisp).

(whitespacep #\Space)
;=> t
(whitespacep #\a)
;=> nil
(whitespacep #\Tab)
;=> t
(whitespacep #\Newline)
;=> t
(whitespacep #\Return)
;=> t
(whitespacep #\Page)
;=> t
(whitespacep #\Backspace)
;=> nil
(whitespacep #\0)
;=> nil
(whitespacep (code-char 160))
;=> nil
(whitespacep 5)
;!E-TYPE
(whitespacep "a")
;!E-TYPE
(remove-if #'whitespacep "a b	c")
;=> "abc"
(count-if #'whitespacep " x y ")
;=> 3
(split-string "  hello   world  ")
;=> ("hello" "world")
(split-string "hello")
;=> ("hello")
(split-string "a b c")
;=> ("a" "b" "c")
(split-string (format nil "a~%b	c"))
;=> ("a" "b" "c")
(split-string "")
;=> nil
(split-string "   ")
;=> nil
(split-string "a,b,,c" #\,)
;=> ("a" "b" "" "c")
(split-string ",a," #\,)
;=> ("" "a" "")
(split-string "" #\,)
;=> ("")
(split-string "," #\,)
;=> ("" "")
(split-string "abc" #\x)
;=> ("abc")
(split-string "a b" #\Space)
;=> ("a" "b")
(split-string "a  b" #\Space)
;=> ("a" "" "b")
(split-string "a::b::c" "::")
;=> ("a" "b" "c")
(split-string "::" "::")
;=> ("" "")
(split-string "a:::b" "::")
;=> ("a" ":b")
(split-string "abc" "abc")
;=> ("" "")
(split-string "xabcx" "abc")
;=> ("x" "x")
(split-string "k=v" "=")
;=> ("k" "v")
(split-string "1.5,2,3" ",")
;=> ("1.5" "2" "3")
(mapcar #'parse-integer (split-string "10 20 30"))
;=> (10 20 30)
(length (split-string "a b c d e f g h"))
;=> 8
(split-string "abc" "")
;!E-TYPE
(split-string "abc" 5)
;!E-TYPE
(split-string 5)
;!E-TYPE
(split-string nil #\,)
;!E-TYPE
(join '("a" "b" "c") ", ")
;=> "a, b, c"
(join '("a" "b" "c"))
;=> "abc"
(join '("a" "b") "")
;=> "ab"
(join '() "-")
;=> ""
(join '())
;=> ""
(join '("x") "-")
;=> "x"
(join '("" "") "-")
;=> "-"
(join '("a" "b") #\/)
;=> "a/b"
(join '("a" "b" "c") " and ")
;=> "a and b and c"
(join (split-string "a b  c") "_")
;=> "a_b_c"
(join (split-string "a,b,c" #\,) ",")
;=> "a,b,c"
(join (list "x" (string #\y)) ":")
;=> "x:y"
(join (loop for i below 3 collect (princ-to-string i)) "+")
;=> "0+1+2"
(length (join (loop repeat 100 collect "ab") ","))
;=> 299
(join '("a" 1) "-")
;!E-TYPE
(join '("a" "b") 5)
;!E-TYPE
(range 5)
;=> (0 1 2 3 4)
(range 1)
;=> (0)
(range 0)
;=> nil
(range -2)
;=> nil
(range 2 5)
;=> (2 3 4)
(range 5 2)
;=> nil
(range 3 3)
;=> nil
(range -2 2)
;=> (-2 -1 0 1)
(range 1 10 3)
;=> (1 4 7)
(range 0 10 5)
;=> (0 5)
(range 0 10 20)
;=> (0)
(range 5 0 -1)
;=> (5 4 3 2 1)
(range 5 0 -2)
;=> (5 3 1)
(range 0 5 -1)
;=> nil
(range -1 -4 -1)
;=> (-1 -2 -3)
(range 0 1 0.25)
;=> (0.0 0.25 0.5 0.75)
(range 1 0 -0.5)
;=> (1.0 0.5)
(range 0.5 3)
;=> (0.5 1.5 2.5)
(length (range 1000))
;=> 1000
(sum-list (range 101))
;=> 5050
(range 1 2 0)
;!E-TYPE
(range 'a)
;!E-TYPE
(range 1 'b)
;!E-TYPE
(range 0 3 'c)
;!E-TYPE
(product '(2 3 4))
;=> 24
(product '(5))
;=> 5
(product '())
;=> 1
(product nil)
;=> 1
(product '(1.5 2))
;=> 3.0
(product '(2 0 7))
;=> 0
(product '(-1 -2 -3))
;=> -6
(product (range 1 11))
;=> 3628800
(product '(0.5 0.5))
;=> 0.25
(product '(2 a))
;!E-TYPE
(product 5)
;!E-TYPE
(product (list most-positive-fixnum 2))
;!E-OVERFLOW
(sum-list '(1 2 3))
;=> 6
(sum-list '(7))
;=> 7
(sum-list '())
;=> 0
(sum-list '(0.5 1))
;=> 1.5
(sum-list '(-1 1))
;=> 0
(sum-list '(1 2.5 -0.5))
;=> 3.0
(sum-list (list most-positive-fixnum 0))
;=> 9223372036854775807
(sum-list '(1 a))
;!E-TYPE
(sum-list 3)
;!E-TYPE
(sum-list (list most-positive-fixnum 1))
;!E-OVERFLOW
(plist-keys '(:a 1 :b 2 :c 3))
;=> (:a :b :c)
(plist-keys '(:a 1))
;=> (:a)
(plist-keys '())
;=> nil
(plist-keys '(a nil b nil))
;=> (a b)
(plist-keys '("x" 1 "y" 2))
;=> ("x" "y")
(plist-keys (list :lr 0.1 :momentum 0.9))
;=> (:lr :momentum)
(let ((p '(:x 1 :y 2))) (mapcar (lambda (k) (getf p k)) (plist-keys p)))
;=> (1 2)
(plist-keys '(:a 1 :b))
;!E-TYPE
(plist-keys '(:a))
;!E-TYPE
(plist-keys 5)
;!E-TYPE
;; complement and constantly
(funcall (complement #'eql) 1 2)
;=> t
(funcall (complement #'evenp) 2)
;=> nil
(remove-if (complement #'evenp) '(1 2 3 4))
;=> (2 4)
(find 'a '(a a b) :test (complement #'eql))
;=> b
(funcall (constantly 'k))
;=> k
(funcall (constantly 7) 1 2 3)
;=> 7
(mapcar (constantly nil) '(1 2))
;=> (nil nil)
(funcall (complement #'car) 5)
;!E-TYPE
