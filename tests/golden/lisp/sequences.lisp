;;;; Sequences (lists, vectors, strings) and one-dimensional arrays.
;;;; Expectations are SBCL's (generated with it) except where a comment says otherwise;
;;;; errors SBCL signals as simple-error carry the code closest to their meaning.

;; elt, subseq, length, copy-seq
(elt '(a b c) 1)
;=> b
(elt "abc" 2)
;=> #\c
(elt #(1 2 3) 0)
;=> 1
(elt '(1 2) 5)
;!E-TYPE
(elt #(1 2) 2)
;!E-TYPE
(elt "abc" -1)
;!E-TYPE
(elt '(1 2 . 3) 5)
;!E-TYPE
(elt 5 0)
;!E-TYPE
(let ((v (make-array 3 :fill-pointer 1 :initial-element 7))) (elt v 1))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (elt l 1) 'x) l)
;=> (1 x 3)
(let ((s (copy-seq "abc"))) (setf (elt s 0) #\z) s)
;=> "zbc"
(subseq "hello" 1 3)
;=> "el"
(subseq #(1 2 3) 1)
;=> #(2 3)
(subseq '(1 2 3) 3)
;=> nil
(subseq '(1 2 3) 1 2)
;=> (2)
(subseq "abc" 0 0)
;=> ""
(subseq '(1 2 3) 2 1)
;!E-TYPE
(subseq '(1 2 3) 0 5)
;!E-TYPE
(subseq "abc" 4)
;!E-TYPE
(subseq #(1 2 3) -1)
;!E-TYPE
(subseq '(1 2 3) 1.0)
;!E-TYPE
(subseq (make-array 5 :fill-pointer 2 :initial-element 1) 0 4)
;!E-TYPE
(handler-case (subseq '(1 2 3) 2 1) (error (c) (princ-to-string c)))
;=> "subseq: the bounding indices 2 and 1 are bad for a sequence of length 3"
(length '(1 2 3))
;=> 3
(length '())
;=> 0
(length "abc")
;=> 3
(length #())
;=> 0
(length (make-array 5 :fill-pointer 2))
;=> 2
(length '(1 2 . 3))
;!E-TYPE
(length 5)
;!E-TYPE

;; SBCL loops forever on a circular list
(let ((l (list 1 2))) (setf (cdr (cdr l)) l) (length l))
;!E-TYPE
(copy-seq '(1 2 3))
;=> (1 2 3)
(copy-seq "abc")
;=> "abc"
(copy-seq #(a b))
;=> #(a b)
(copy-seq (make-array 5 :fill-pointer 2 :initial-element 1))
;=> #(1 1)
(let* ((a (list 1 2)) (b (copy-seq a))) (list (eq a b) (equal a b)))
;=> (nil t)
(copy-seq 5)
;!E-TYPE

;; find, position, count
(find 2 '(1 2 3))
;=> 2
(find 5 '(1 2 3))
;=> nil
(find #\a "banana" :test #'char=)
;=> #\a
(find 2 '((1 a) (2 b)) :key #'car)
;=> (2 b)
(find 2 '(1 2 3) :test-not #'eql)
;=> 1
(find "b" '("a" "b") :test #'string=)
;=> "b"
(find "b" '("a" "b"))
;=> nil

;; SBCL's find leaves :start unchecked on lists; bad indices are E-TYPE for every sequence here
(find 3 '(1 2 3) :start 5)
;!E-TYPE
(find 3 #(1 2 3) :start 5)
;!E-TYPE
(handler-case (find 3 #(1 2 3) :start 5) (error (c) (princ-to-string c)))
;=> "find: the bounding indices 5 and nil are bad for a sequence of length 3"
(find-if #'evenp '(1 2 3 4) :start 1 :end 1)
;=> nil
(find 3 '(1 2 3) :start 2 :end 1)
;!E-TYPE
(find 3 '(1 2 3) :end 2)
;=> nil
(find 3 '(1 2 3 . 4))
;!E-TYPE
(find 1 '(1 2) :test #'eql :test-not #'eql)
;!E-ARITY
(find 1 '(1 2) :bogus 3)
;!E-ARITY
(find 1 '(1 2) :start)
;!E-ARITY
(find 1 5)
;!E-TYPE
(find-if #'evenp '(1 2 3 4))
;=> 2
(find-if #'evenp '(1 2 3 4) :from-end t)
;=> 4
(find-if #'evenp #(1 3 5))
;=> nil
(find-if #'upper-case-p "abCdE" :start 3)
;=> #\E
(find-if-not #'evenp '(2 4 6))
;=> nil
(find-if-not #'evenp '(2 4 5 7))
;=> 5
(find-if #'plusp '((1) (-2)) :key #'car :from-end t)
;=> (1)
(position 3 '(1 2 3 4))
;=> 2
(position 5 '(1 2 3))
;=> nil
(position #\b "abcb" :from-end t)
;=> 3
(position #\a "banana" :from-end t :start 1 :end 4)
;=> 3
(position 2 #(1 2 3 2) :start 2)
;=> 3
(position-if #'oddp '(2 4 5 7))
;=> 2
(position-if #'oddp '(2 4 5 7) :from-end t)
;=> 3
(position-if-not #'evenp '(2 4 5))
;=> 2
(position-if #'zerop #(1 0 1) :key #'1-)
;=> 0
(count 3 '(1 3 3 4))
;=> 2
(count #\a "banana")
;=> 3
(count 1 '(1 2 1) :test #'/=)
;=> 1
(count 1 #(1 1 1) :start 1)
;=> 2
(count-if #'oddp #(1 2 3 4 5) :start 1 :end 4)
;=> 1
(count-if #'oddp '())
;=> 0
(count-if-not #'evenp '(1 2 3))
;=> 2
(count-if #'evenp '((1) (2) (4)) :key #'car)
;=> 2
(count 3 '(1 3 3 . 4))
;!E-TYPE

;; remove, delete
(remove 1 '(1 2 1 3 1))
;=> (2 3)
(remove 1 '(1 2 1 3 1) :count 2)
;=> (2 3 1)
(remove 1 '(1 2 1 3 1) :count 2 :from-end t)
;=> (1 2 3)
(remove #\a "banana")
;=> "bnn"
(remove 'a '(a b a c) :count 1)
;=> (b a c)
(remove 3 '(1 2 3 4 5) :test #'<)
;=> (1 2 3)
(remove 3 '(1 2 3 4 5) :test-not #'<)
;=> (4 5)
(remove 1 #(1 2 1) :start 1)
;=> #(1 2)
(remove 1 '(1 2) :count -1)
;=> (1 2)
(remove 1 '(1 2) :count 0)
;=> (1 2)
(remove 1 '(1 2) :count 1.5)
;!E-TYPE
(remove 9 '(1 2 3))
;=> (1 2 3)
(remove 'a '((a 1) (b 2) (a 3)) :key #'car)
;=> ((b 2))
(let* ((l (list 1 2 3 4)) (r (remove 9 l))) (list (eq l r) r))
;=> (nil (1 2 3 4))
(remove-if #'evenp '(1 2 3 4))
;=> (1 3)
(remove-if #'evenp "abc" :key #'char-code)
;=> "ac"
(remove-if #'evenp #(1 2 3 4) :count 1 :from-end t)
;=> #(1 2 3)
(remove-if-not #'evenp #(1 2 3 4))
;=> #(2 4)
(remove-if-not #'alpha-char-p "a1b2c3")
;=> "abc"
(delete 1 (list 1 2 1 3))
;=> (2 3)
(delete 3 (vector 1 3 2 3))
;=> #(1 2)
(delete #\a (copy-seq "banana") :count 2)
;=> "bnna"
(let* ((l (list 1 2 3 1 4)) (r (delete 1 l))) (list l r))
;=> ((1 2 3 4) (2 3 4))
(let ((v (make-array 4 :fill-pointer 4 :initial-contents '(1 3 2 3)))) (list (delete 3 v) v (length v)))
;=> (#(1 2) #(1 2) 2)
(delete-if #'evenp (list 1 2 3 4))
;=> (1 3)
(delete-if-not #'evenp (list 1 2 3 4))
;=> (2 4)
(delete-if #'evenp (list 2 4))
;=> nil
(delete 1 nil)
;=> nil

;; substitute
(substitute 9 1 '(1 2 1 3 1))
;=> (9 2 9 3 9)
(substitute 9 1 '(1 2 1 3 1) :count 2 :from-end t)
;=> (1 2 9 3 9)
(substitute #\x #\a "banana" :start 2)
;=> "banxnx"
(substitute 1 2 "abc")
;=> "abc"
(substitute 1 #\a "abc")
;!E-TYPE
(substitute 'x 2 #(1 2 3 2) :count 1)
;=> #(1 x 3 2)
(substitute-if 0 #'oddp '(1 2 3))
;=> (0 2 0)
(substitute-if-not 0 #'oddp #(1 2 3))
;=> #(1 0 3)
(substitute 'z 'a '((a) (b)) :key #'car)
;=> (z (b))
(nsubstitute #\x #\a (copy-seq "banana"))
;=> "bxnxnx"
(nsubstitute 0 1 (list 1 2 1))
;=> (0 2 0)
(let ((l (list 1 2 1))) (nsubstitute 0 1 l) l)
;=> (0 2 0)
(nsubstitute-if 0 #'evenp (list 1 2 3 4) :count 1 :from-end t)
;=> (1 2 3 0)
(nsubstitute-if-not 0 #'evenp (vector 1 2 3 4) :count 1)
;=> #(0 2 3 4)

;; remove-duplicates keeps the last occurrence unless :from-end
(remove-duplicates '(1 2 1 3 2))
;=> (1 3 2)
(remove-duplicates '(1 2 1 3 2) :from-end t)
;=> (1 2 3)
(remove-duplicates "abcabc")
;=> "abc"
(remove-duplicates #(1 2 1 3) :test #'=)
;=> #(2 1 3)
(remove-duplicates '((a 1) (b 2) (a 3)) :key #'car)
;=> ((b 2) (a 3))
(remove-duplicates '((a 1) (b 2) (a 3)) :key #'car :from-end t)
;=> ((a 1) (b 2))
(remove-duplicates '(1 2 3 4 1 2) :start 1 :end 5)
;=> (1 2 3 4 1 2)
(remove-duplicates '(a b c b a) :start 1 :end 4)
;=> (a c b a)
(remove-duplicates '(1 2 1 2 3) :test-not #'/=)
;=> (1 2 3)
(remove-duplicates (list 1 2 3) :test #'<)
;=> (3)
(remove-duplicates '("a" "b" "a") :test #'equal)
;=> ("b" "a")
(remove-duplicates '("a" "b" "a"))
;=> ("a" "b" "a")
(remove-duplicates '())
;=> nil
(delete-duplicates (list 'a 'b 'a 'c) :from-end t)
;=> (a b c)
(delete-duplicates (list 'a 'b 'a 'c))
;=> (b a c)
(delete-duplicates (vector 1 1 2 2))
;=> #(1 2)

;; fill, replace
(fill (list 1 2 3 4) 0 :start 1 :end 3)
;=> (1 0 0 4)
(fill (make-array 3) 'x)
;=> #(x x x)
(fill (copy-seq "abc") #\z :start 1)
;=> "azz"
(fill (copy-seq "abc") 1)
;!E-TYPE
(fill (vector 1 2) 0 :end 3)
;!E-TYPE
(replace (list 1 2 3 4 5) '(a b c) :start1 1 :end2 2)
;=> (1 a b 4 5)
(replace (copy-seq "abcde") "xy" :start1 3)
;=> "abcxy"
(replace (vector 1 2 3) "ab")
;=> #(#\a #\b 3)
(replace (copy-seq "abc") '(1))
;!E-TYPE
(let ((s (copy-seq "abcdef"))) (replace s s :start1 2 :end1 5))
;=> "ababcf"
(let ((s (copy-seq "abcdef"))) (replace s s :start1 0 :start2 2))
;=> "cdefef"
(replace (list 1 2) #(a b c d))
;=> (a b)

;; search, mismatch
(search "bc" "abcbc")
;=> 1
(search "bc" "abcbc" :from-end t)
;=> 3
(search '(2 3) #(1 2 3 4))
;=> 1
(search "xyz" "abc")
;=> nil
(search "a" "banana" :from-end t :end2 4)
;=> 3
(search '(1 2) '(0 1 2 1 2) :start2 2)
;=> 3
(search "" "abc")
;=> 0
(search "" "abc" :from-end t)
;=> 3
(search '(a b) '(x a b) :test #'eq)
;=> 1
(search "ab" "xxab" :end2 3)
;=> nil
(search "AB" "xxab" :test #'char-equal)
;=> 2
(search '(1 2) '((0 1) (0 2)) :key (lambda (x) (if (consp x) (cadr x) x)))
;=> 0
(search "abcd" "bc")
;=> nil
(search "ab" "abc" :start1 3)
;!E-TYPE
(mismatch "abc" "abd")
;=> 2
(mismatch "abc" "abc")
;=> nil
(mismatch "abc" "xbc" :from-end t)
;=> 1
(mismatch '(1 2 3) '(1 2))
;=> 2
(mismatch '(1 2 3) '(1 2 3 4))
;=> 3
(mismatch "abc" "ABC" :test #'char-equal)
;=> nil
(mismatch '(1 2) '(3 2) :key #'evenp)
;=> nil
(mismatch "abcd" "xbcd" :start1 1 :start2 1)
;=> nil
(mismatch "abc" "zabc" :from-end t)
;=> 0
(mismatch "" "")
;=> nil
(mismatch #(1 2 3) '(1 2 4) :test-not #'/=)
;=> 2

;; sort, stable-sort (destructive; the result is what matters)
(sort (list 3 1 2) #'<)
;=> (1 2 3)
(sort (vector 3 1 2) #'>)
;=> #(3 2 1)
(sort (copy-seq "cba") #'char<)
;=> "abc"
(sort (list 3 1 2) #'< :key #'-)
;=> (3 2 1)
(sort (list "bb" "a" "ccc") #'< :key #'length)
;=> ("a" "bb" "ccc")
(sort (list) #'<)
;=> nil
(sort (vector) #'<)
;=> #()
(sort (list 1 2) 'no-such-function)
;!E-UNBOUND
(sort (list 1 2) #'<=)
;=> (1 2)
(sort 5 #'<)
;!E-TYPE
(stable-sort (list '(1 a) '(0 b) '(1 c) '(0 d)) #'< :key #'car)
;=> ((0 b) (0 d) (1 a) (1 c))
(stable-sort (vector "bb" "a" "ccc" "dd") #'< :key #'length)
;=> #("a" "bb" "dd" "ccc")
(stable-sort (list 5 3 5 1 3 1 2 9 8 7 6 5 4) #'>)
;=> (9 8 7 6 5 5 5 4 3 3 2 1 1)
(let ((v (vector 3 1 2))) (sort v #'<) v)
;=> #(1 2 3)
(let ((v (make-array 4 :fill-pointer 3 :initial-contents '(3 2 1 0)))) (sort v #'<) (list v (aref v 3)))
;=> (#(1 2 3) 0)
(sort (list 1 "a") #'<)
;!E-TYPE
(sort (list 3 1 2) (lambda (a b) (values (< a b) 99)))
;=> (1 2 3)
(length (sort (loop for i below 1000 collect (mod (* i 7919) 1009)) #'<))
;=> 1000
(let ((l (sort (loop for i below 200 collect (mod (* i 37) 101)) #'<))) (every #'<= l (cdr l)))
;=> t

;; merge
(merge 'list (list 1 3 5) (list 2 4) #'<)
;=> (1 2 3 4 5)
(merge 'vector (vector 1 3) (list 2 4) #'<)
;=> #(1 2 3 4)
(merge 'string (copy-seq "ad") (copy-seq "bc") #'char<)
;=> "abcd"
(merge 'list (list '(1 a) '(2 b)) (list '(1 c) '(2 d)) #'< :key #'car)
;=> ((1 a) (1 c) (2 b) (2 d))
(merge 'list (list 1 4) (list 2 3) #'<)
;=> (1 2 3 4)
(merge 'list nil (list 1) #'<)
;=> (1)
(merge nil (list 1) (list 2) #'<)
;!E-TYPE

;; reduce
(reduce #'+ '(1 2 3 4))
;=> 10
(reduce #'+ '())
;=> 0
(reduce #'+ '(5))
;=> 5
(reduce #'+ '(5) :from-end t)
;=> 5
(reduce #'list '(1 2 3 4))
;=> (((1 2) 3) 4)
(reduce #'list '(1 2 3 4) :from-end t)
;=> (1 (2 (3 4)))
(reduce #'list '(1 2 3 4) :initial-value 0)
;=> ((((0 1) 2) 3) 4)
(reduce #'list '(1 2 3 4) :initial-value 0 :from-end t)
;=> (1 (2 (3 (4 0))))
(reduce #'list '(5) :key #'list)
;=> (5)
(reduce #'+ #(1 2 3) :key #'1+ :initial-value 10)
;=> 19
(reduce #'+ '(1 2 3) :start 1)
;=> 5
(reduce #'+ '(1 2 3) :end 2)
;=> 3
(reduce #'- '(1 2 3 4) :from-end t)
;=> -2
(reduce #'- '(1 2 3 4) :from-end t :initial-value 10)
;=> 8
(reduce #'max #(3 9 2))
;=> 9
(reduce #'+ "" :initial-value 0)
;=> 0
(reduce (lambda (a c) (+ (* a 10) (digit-char-p c))) "123" :initial-value 0)
;=> 123
(reduce #'+ '(1 2) :start 3)
;!E-TYPE
(reduce #'list '() :initial-value 'x)
;=> x
(reduce #'list '(1 2 3) :start 1 :end 1)
;=> nil

;; some, every, notany, notevery
(some #'evenp '(1 2 3))
;=> t
(some #'evenp #(1 3))
;=> nil
(some (lambda (x) (and (evenp x) (* x 10))) '(1 4 6))
;=> 40
(some #'> '(1 2 3) '(0 5))
;=> t
(some #'< '(1 2) '(0 1) '(5 5))
;=> nil
(some #'digit-char-p "ab7")
;=> 7
(every #'evenp '())
;=> t
(every #'evenp '(2 4))
;=> t
(every #'< '(1 2) '(2 3 0))
;=> t
(every #'identity "")
;=> t
(every #'< '(1 5) '(2 3))
;=> nil
(notany #'oddp '(2 4))
;=> t
(notany #'> '(1 2) '(3 4))
;=> t
(notany #'oddp '(2 3))
;=> nil
(notevery #'oddp '(1 3))
;=> nil
(notevery #'> '(1 2) '(0 4))
;=> t
(some #'evenp 5)
;!E-TYPE

;; map, map-into, concatenate, make-sequence
(map 'list #'+ '(1 2) #(10 20 30))
;=> (11 22)
(map 'string #'char-upcase "abc")
;=> "ABC"
(map 'vector #'1+ '(1 2 3))
;=> #(2 3 4)
(map 'list #'cons '(a b) "xy")
;=> ((a . #\x) (b . #\y))
(map 'list #'list '(1 2 3))
;=> ((1) (2) (3))
(map 'vector #'char-code "ab")
;=> #(97 98)
(map '(vector character) #'identity "ab")
;=> "ab"
(map '(simple-array character (*)) #'char-upcase "ab")
;=> "AB"
(map 'simple-vector #'identity '(1 2))
;=> #(1 2)
(map 'list (lambda (x) (values x 2)) '(1 2))
;=> (1 2)
(let ((n 0)) (list (map nil (lambda (x) (incf n x)) '(1 2 3)) n))
;=> (nil 6)
(map 'string #'identity '(1))
;!E-TYPE
(map nil #'identity 5)
;!E-TYPE
(map 'foo #'identity '(1))
;!E-TYPE
(map 'list #'+)
;!E-ARITY
(map 'list #'+ '(1 2) '())
;=> nil
(map-into (list 1 2 3) #'- '(4 5))
;=> (-4 -5 3)
(map-into (make-array 3 :initial-element 0) #'+ '(1 2 3) '(10 20))
;=> #(11 22 0)
(map-into (list 1 2) (lambda () 7))
;=> (7 7)
(map-into (copy-seq "abc") #'char-upcase "xy")
;=> "XYc"
(let ((v (make-array 5 :fill-pointer 2))) (map-into v #'identity '(a b c d)) (list v (length v)))
;=> (#(a b c d) 4)
(concatenate 'string "ab" '(#\c) #(#\d))
;=> "abcd"
(concatenate 'vector "ab" '(1))
;=> #(#\a #\b 1)
(concatenate 'list "ab" #(1) '(x))
;=> (#\a #\b 1 x)
(concatenate 'list)
;=> nil
(concatenate 'vector)
;=> #()
(concatenate 'string)
;=> ""
(concatenate 'simple-vector '(1 2))
;=> #(1 2)
(concatenate '(string 3) "ab" "c")
;=> "abc"
(concatenate '(vector t 3) '(1 2))
;!E-TYPE
(concatenate 'string "ab" '(1))
;!E-TYPE
(concatenate 'foo '(1 2))
;!E-TYPE
(concatenate 'list '(1 . 2))
;!E-TYPE
(make-sequence 'list 2)
;=> (nil nil)
(make-sequence 'vector 2)
;=> #(0 0)
(make-sequence 'string 2 :initial-element #\a)
;=> "aa"
(make-sequence 'list 3 :initial-element 'x)
;=> (x x x)
(make-sequence '(vector t 3) 2)
;!E-TYPE

;; vectors and arrays
(vector)
;=> #()
(vector 1 "a" #\b)
;=> #(1 "a" #\b)
(make-array 3)
;=> #(0 0 0)
(make-array '(3) :initial-element 'x)
;=> #(x x x)
(make-array 3 :initial-contents '(a b c))
;=> #(a b c)
(make-array 2 :initial-contents "ab")
;=> #(#\a #\b)
(make-array 2 :initial-contents "ab" :element-type 'character)
;=> "ab"
(make-array 3 :element-type 'character :initial-element #\z)
;=> "zzz"
(make-array 3 :element-type 'character :fill-pointer 1 :initial-element #\a)
;=> "a"
(make-array 3 :element-type 'double-float)
;=> #(0.0 0.0 0.0)
(make-array 3 :element-type 'fixnum)
;=> #(0 0 0)
(make-array '(2) :initial-contents '((1) (2)))
;=> #((1) (2))
(make-array 3 :fill-pointer t)
;=> #(0 0 0)
(make-array 3 :fill-pointer 1 :initial-element 0)
;=> #(0)
(make-array 0)
;=> #()
(make-array 2 :initial-contents '(1 2 3))
;!E-TYPE
(make-array 3 :fill-pointer 4)
;!E-TYPE
(make-array -1)
;!E-TYPE
(make-array 2.0)
;!E-TYPE
(make-array 2 :element-type 'character :initial-element 1)
;!E-TYPE
(make-array '(2 3))
;!E-UNSUPPORTED
(make-array '(2 3 4) :initial-element 0)
;!E-UNSUPPORTED
(make-array 2 :displaced-to (vector 1 2))
;!E-UNSUPPORTED
(make-array 2 :bogus 1)
;!E-ARITY
(aref (make-array 3 :initial-contents '(a b c)) 1)
;=> b
(aref "abc" 1)
;=> #\b
(aref (make-array 3 :fill-pointer 1 :initial-element 5) 2)
;=> 5
(aref #(1 2) 2)
;!E-TYPE
(aref #(1 2) -1)
;!E-TYPE
(aref '(1 2) 0)
;!E-TYPE
(aref #(1 2) 0 1)
;!E-ARITY
(let ((v (vector 1 2 3))) (setf (aref v 1) 'x) v)
;=> #(1 x 3)
(let ((v (vector 1 2 3))) (incf (aref v 2) 10) v)
;=> #(1 2 13)
(svref (vector 1 2) 1)
;=> 2
(svref (vector 1 2) 2)
;!E-TYPE
(svref "ab" 0)
;!E-TYPE
(svref (make-array 3 :fill-pointer 1) 0)
;!E-TYPE
(let ((v (vector 1 2))) (setf (svref v 0) 'a) v)
;=> #(a 2)

;; fill pointers
(let ((v (make-array 2 :fill-pointer 0))) (list (vector-push 9 v) (vector-push 8 v) (vector-push 7 v) v))
;=> (0 1 nil #(9 8))
(vector-push 1 (make-array 3))
;!E-TYPE
(let ((v (make-array 2 :fill-pointer 0))) (vector-push-extend 1 v) (vector-push-extend 2 v) (vector-push-extend 3 v) (list v (array-total-size v) (adjustable-array-p v)))
;=> (#(1 2 3) 4 t)
(vector-push-extend 1 (make-array 2))
;!E-TYPE
(let ((v (make-array 2 :fill-pointer 0))) (vector-push-extend 9 v 10) (array-total-size v))
;=> 2
(let ((v (make-array 0 :fill-pointer 0))) (vector-push-extend 9 v) (array-total-size v))
;=> 1
(let ((v (make-array 5 :fill-pointer 0))) (dotimes (i 6) (vector-push-extend i v)) (list v (array-total-size v)))
;=> (#(0 1 2 3 4 5) 10)
(let ((v (make-array 2 :fill-pointer 2))) (vector-push-extend 1 v 3) (array-total-size v))
;=> 5
(let ((v (make-array 5 :fill-pointer 0 :element-type 'character))) (vector-push-extend #\a v) v)
;=> "a"
(let ((v (make-array 0 :fill-pointer 0 :adjustable t))) (dotimes (i 100) (vector-push-extend i v)) (list (length v) (reduce #'+ v)))
;=> (100 4950)
(let ((s (make-array 0 :fill-pointer 0 :element-type 'character))) (vector-push-extend 1 s))
;!E-TYPE
(let ((v (make-array 3 :fill-pointer 0 :element-type 'character))) (vector-push #\a v) (vector-push #\b v) (list v (length v) (vector-pop v) v))
;=> ("a" 2 #\b "a")
(vector-pop (make-array 3 :fill-pointer 2 :initial-contents '(1 2 3)))
;=> 2
(vector-pop (make-array 3 :fill-pointer 0))
;!E-TYPE
(vector-pop "abc")
;!E-TYPE
(let ((v (make-array 2 :fill-pointer 1 :initial-contents '(a b)))) (list (aref v 1) (elt v 0) (length v) (fill-pointer v) (setf (fill-pointer v) 2) v))
;=> (b a 1 1 2 #(a b))
(fill-pointer (vector 1 2))
;!E-TYPE
(array-has-fill-pointer-p #(1))
;=> nil
(array-has-fill-pointer-p (make-array 1 :fill-pointer 0))
;=> t
(array-has-fill-pointer-p '(1))
;!E-TYPE
(adjustable-array-p (make-array 2 :fill-pointer 0))
;=> t
(adjustable-array-p (make-array 2))
;=> nil
(adjustable-array-p (make-array 2 :adjustable t))
;=> t

;; adjust-array
(adjust-array (vector 1 2) 4 :initial-element 0)
;=> #(1 2 0 0)
(adjust-array (vector 1 2 3) 2)
;=> #(1 2)
(adjust-array (vector 1 2 3) '(5))
;=> #(1 2 3 0 0)
(let ((v (vector 1 2))) (adjust-array v 4) v)
;=> #(1 2)
(let ((v (make-array 2 :adjustable t :initial-element 1))) (adjust-array v 4) v)
;=> #(1 1 0 0)
(let ((v (make-array 3 :fill-pointer 3 :adjustable t :initial-contents '(1 2 3)))) (adjust-array v 5 :fill-pointer 4) v)
;=> #(1 2 3 0)
(adjust-array (make-array 2 :fill-pointer 1 :adjustable t) 4 :fill-pointer t)
;=> #(0 0 0 0)
(adjust-array (copy-seq "ab") 4 :initial-element #\z)
;=> "abzz"
(adjust-array (vector 1 2) 3 :initial-contents '(a b c))
;=> #(a b c)
(adjust-array (make-array 3 :fill-pointer 3) 1)
;!E-TYPE
(adjust-array (vector 1 2) 3 :fill-pointer 1)
;!E-TYPE
(adjust-array (vector 1 2) '(2 2))
;!E-UNSUPPORTED

;; dimensions and predicates
(array-dimensions (make-array 4))
;=> (4)
(array-dimensions (make-array 4 :fill-pointer 1))
;=> (4)
(array-dimension #(1 2) 0)
;=> 2
(array-dimension "abc" 0)
;=> 3
(array-dimension #(1 2) 1)
;!E-TYPE
(array-rank #(1))
;=> 1
(array-rank "abc")
;=> 1
(array-total-size (make-array 4 :fill-pointer 1))
;=> 4
(array-total-size "abcd")
;=> 4
(array-element-type "abc")
;=> character
(array-element-type #(1))
;=> t
(array-element-type (make-array 2 :element-type 'character))
;=> character
(array-rank '(1))
;!E-TYPE
(list (arrayp "a") (arrayp #(1)) (arrayp '(1)) (arrayp nil))
;=> (t t nil nil)
(list (vectorp "abc") (vectorp #(1)) (vectorp '(1)) (vectorp 5))
;=> (t t nil nil)
(list (simple-vector-p "a") (simple-vector-p #(1)) (simple-vector-p (make-array 2 :adjustable t)) (simple-vector-p (make-array 2 :fill-pointer 0)))
;=> (nil t nil nil)
(array-in-bounds-p #(1 2) 1)
;=> t
(array-in-bounds-p #(1 2) 2)
;=> nil
(row-major-aref #(a b c) 2)
;=> c

;; multiple values of a predicate or key do not leak into the result
(find-if (lambda (x) (values (evenp x) 7)) '(1 2 3))
;=> 2
(position-if (lambda (x) (values (evenp x) 7)) '(1 2 3))
;=> 1
(count-if (lambda (x) (values (evenp x) 7)) '(1 2 3))
;=> 1
(some (lambda (x) (values (evenp x) 7)) '(1 2 3))
;=> t
(every (lambda (x) (values (plusp x) 7)) '(1 2 3))
;=> t
(reduce (lambda (a b) (values (+ a b) 7)) '(1 2 3))
;=> 6
(remove-if (lambda (x) (values (evenp x) 7)) '(1 2 3))
;=> (1 3)
(map 'vector (lambda (x) (values x 7)) '(1 2))
;=> #(1 2)
(sort (list 2 1) (lambda (a b) (values (< a b) 7)))
;=> (1 2)
(position 2 '(1 2 3) :key (lambda (x) (values x 7)))
;=> 1

;; an error inside the predicate propagates and leaves the sequence as it was
;; (SBCL leaves it partly sorted: CL does not say)
(let ((v (vector 3 1 2))) (handler-case (sort v (lambda (a b) (if (= a 2) (error "stop") (< a b)))) (error () v)))
;=> #(3 1 2)
(let ((v (vector 3 1 2))) (sort v (lambda (a b) (error "bad ~a ~a" a b))))
;!E-USER
(block nil (sort (list 3 1 2) (lambda (a b) (return (list a b)))))
;=> (1 3)

;; larger inputs
(let ((l (loop for i below 2000 collect (mod (* i 7919) 2003)))) (equal (sort (copy-list l) #'<) (stable-sort (coerce l 'vector) #'<)))
;=> nil
(length (remove-duplicates (loop for i below 3000 collect (mod i 100))))
;=> 100
(reduce #'+ (make-array 10000 :initial-element 1))
;=> 10000
(length (concatenate 'string (make-string 1000 :initial-element #\a) "b"))
;=> 1001
(count #\a (make-string 500 :initial-element #\a))
;=> 500

;; strings with fill pointers, more keyword combinations
(let ((s (make-array 5 :element-type 'character :fill-pointer 3 :initial-element #\a))) (list (copy-seq s) (length s) (concatenate 'string s "b") (remove #\a s) (reverse (subseq s 1))))
;=> ("aaa" 3 "aaab" "" "aa")
(let ((s (make-array 4 :element-type 'character :fill-pointer 4 :initial-contents "abab"))) (list (delete #\a s) (length s) (array-total-size s)))
;=> ("bb" 2 4)
(substitute-if #\x #'digit-char-p "a1b2")
;=> "axbx"
(nsubstitute 1 #\a (copy-seq "abc"))
;!E-TYPE
(delete-duplicates (copy-seq "abcabd"))
;=> "cabd"
(remove-if #'evenp #(1 2 3 4) :start 1 :end 3)
;=> #(1 3 4)
(position-if #'evenp '(1 2 4) :from-end t :end 2)
;=> 1
(find 3 '(1 2 3 4) :test-not #'<)
;=> 1
(count 2 '(1 2 3 4) :test #'<)
;=> 2
(remove 2 '(1 2 3 4) :test-not #'<)
;=> (3 4)
(search '(1 2) '(5 1 2 3) :test-not #'/=)
;=> 1
(mismatch '(1 2 3) '(1 2 3) :start1 1)
;=> 1
(mismatch '(1 2 3) '(9 1 2 3) :from-end t :end2 3)
;=> 3
(reduce #'cons '(1 2 3) :from-end t :initial-value nil)
;=> (1 2 3)
(map 'list #'min '(3 1) '(2 2) '(1 3))
;=> (1 1)
(every #'char< "abc" "bcd")
;=> t
(some #'char= "abc" "xbz")
;=> t
(let ((v (vector 1 2 3))) (fill v 0 :start 1) v)
;=> #(1 0 0)
(let ((l (list 1 2 3))) (replace l '(a b c d e) :start1 1) l)
;=> (1 a b)
(concatenate 'list '(1) nil #() "")
;=> (1)
(elt (vector 'a 'b) 1.0)
;!E-TYPE
;; count :from-end applies the key and test to the elements last to first
(let ((c 0)) (count 1 '(1 2 3 7 4 5 7 6 2 8) :from-end t :key #'(lambda (x) (prog1 (- x c) (incf c)))))
;=> 3
(let ((c 0)) (count 1 #(1 2 3 7 4 5 7 6 2 8) :from-end t :key #'(lambda (x) (prog1 (- x c) (incf c)))))
;=> 3
(let ((seen nil)) (count 'a '(a b a) :from-end t :key #'(lambda (x) (push x seen) x)) seen)
;=> (a b a)
(let ((seen nil)) (count-if #'(lambda (x) (push x seen) nil) #(1 2 3 4) :from-end t :start 1 :end 3) seen)
;=> (2 3)
(count #\a "banana" :from-end t :start 2)
;=> 2
(count 1 '(1 1 2) :from-end t :end 4)
;!E-TYPE
;;; remove-duplicates with a standard test hashes: large inputs stay linear.
(length (remove-duplicates (loop for i below 100000 collect (mod i 1000))))
;=> 1000
(remove-duplicates (list "a" "A" "b" "a") :test #'equal)
;=> ("A" "b" "a")
(remove-duplicates (list "a" "A" "b" "a") :test #'equalp :from-end t)
;=> ("a" "b")
(remove-duplicates '(1 2 1.0 2) :test 'eql)
;=> (1 1.0 2)
(remove-duplicates '((a 1) (b 2) (a 3)) :key #'car)
;=> ((b 2) (a 3))
