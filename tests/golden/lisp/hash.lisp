;;;; Hash tables (language.md, Builtins). Expected values from SBCL 2.2.9.
;; make-hash-table and the tests
(hash-table-p (make-hash-table))
;=> t
(hash-table-p '(a))
;=> nil
(hash-table-p nil)
;=> nil
(hash-table-count (make-hash-table))
;=> 0
(hash-table-test (make-hash-table))
;=> eql
(hash-table-test (make-hash-table :test 'eq))
;=> eq
(hash-table-test (make-hash-table :test 'eql))
;=> eql
(hash-table-test (make-hash-table :test 'equal))
;=> equal
(hash-table-test (make-hash-table :test 'equalp))
;=> equalp
(hash-table-test (make-hash-table :test #'equal))
;=> equal
(hash-table-test (make-hash-table :test #'eq))
;=> eq
(hash-table-test (make-hash-table :test #'equalp))
;=> equalp
(hash-table-test (make-hash-table :test #'eql :size 10))
;=> eql
(hash-table-count (make-hash-table :size 0))
;=> 0
(hash-table-count (make-hash-table :size 1000 :rehash-size 2.0 :rehash-threshold 0.8))
;=> 0
(make-hash-table :test 'foo)
;!E-TYPE
(make-hash-table :test #'car)
;!E-TYPE
(make-hash-table :test nil)
;!E-TYPE
(make-hash-table :size -1)
;!E-TYPE
(make-hash-table :size 1.5)
;!E-TYPE
(make-hash-table :bad 1)
;!E-ARITY
(make-hash-table :test)
;!E-ARITY
(typep (make-hash-table) 'hash-table)
;=> t
(type-of (make-hash-table))
;=> hash-table
(integerp (hash-table-size (make-hash-table)))
;=> t
(plusp (hash-table-size (make-hash-table :size 50)))
;=> t
(>= (hash-table-size (make-hash-table :size 50)) 50)
;=> t
(let ((h (make-hash-table))) (dotimes (i 100) (setf (gethash i h) i)) (>= (hash-table-size h) 100))
;=> t
; SBCL gives single floats (1.5f0); every float is a double here (deliberate difference)
(hash-table-rehash-size (make-hash-table))
;=> 1.5
(hash-table-rehash-threshold (make-hash-table))
;=> 1.0
;; gethash and (setf gethash)
(defvar *h* (make-hash-table))
(gethash 'a *h*)
;=> nil
;=> nil
(gethash 'a *h* 'dflt)
;=> dflt
;=> nil
(setf (gethash 'a *h*) 1)
;=> 1
(gethash 'a *h*)
;=> 1
;=> t
(gethash 'a *h* 'dflt)
;=> 1
;=> t
(setf (gethash 'b *h*) nil)
;=> nil
(gethash 'b *h*)
;=> nil
;=> t
(gethash 'b *h* 5)
;=> nil
;=> t
(hash-table-count *h*)
;=> 2
(setf (gethash 'a *h*) 2)
;=> 2
(gethash 'a *h*)
;=> 2
;=> t
(hash-table-count *h*)
;=> 2
(incf (gethash 'a *h*))
;=> 3
(incf (gethash 'c *h* 10) 5)
;=> 15
(gethash 'c *h*)
;=> 15
;=> t
(push 'x (gethash 'd *h*))
;=> (x)
(push 'y (gethash 'd *h*))
;=> (y x)
(gethash 'd *h*)
;=> (y x)
;=> t
(hash-table-count *h*)
;=> 4
(multiple-value-list (gethash 'zz *h*))
;=> (nil nil)
(nth-value 1 (gethash 'a *h*))
;=> t
(gethash 'a 'not-a-table)
;!E-TYPE
(gethash 'a)
;!E-ARITY
(setf (gethash 'a 5) 1)
;!E-TYPE
(let ((h (make-hash-table))) (setf (gethash 1 h) 'one (gethash 2 h) 'two) (list (gethash 1 h) (gethash 2 h) (gethash 3 h)))
;=> (one two nil)
;; remhash and clrhash
(remhash 'a *h*)
;=> t
(remhash 'a *h*)
;=> nil
(gethash 'a *h*)
;=> nil
;=> nil
(hash-table-count *h*)
;=> 3
(remhash 'zz *h*)
;=> nil
(eq (clrhash *h*) *h*)
;=> t
(hash-table-count *h*)
;=> 0
(gethash 'b *h*)
;=> nil
;=> nil
(remhash 'a 1)
;!E-TYPE
(clrhash '(a))
;!E-TYPE
(let ((h (make-hash-table))) (setf (gethash 1 h) 1) (remhash 1 h) (setf (gethash 1 h) 2) (list (gethash 1 h) (hash-table-count h)))
;=> (2 1)
;; eql vs eq vs equal vs equalp keys
(let ((h (make-hash-table))) (setf (gethash 1.5 h) 'f (gethash 10 h) 'i (gethash #\a h) 'c) (list (gethash 1.5 h) (gethash 10 h) (gethash #\a h) (gethash #\A h) (gethash 1.5d0 h)))
;=> (f i c nil f)
(let ((h (make-hash-table))) (setf (gethash 1 h) 'int) (list (gethash 1.0 h) (gethash 1 h)))
;=> (nil int)
(let ((h (make-hash-table))) (setf (gethash 0.0 h) 'pz) (list (gethash -0.0 h) (gethash 0.0 h)))
;=> (nil pz)
(let ((h (make-hash-table))) (setf (gethash "abc" h) 1) (gethash "abc" h))
;=> nil
;=> nil
(let ((h (make-hash-table))) (setf (gethash (list 1) h) 1) (gethash (list 1) h))
;=> nil
;=> nil
(let ((h (make-hash-table)) (k (list 1))) (setf (gethash k h) 1) (gethash k h))
;=> 1
;=> t
(let ((h (make-hash-table :test 'eq))) (setf (gethash 'k h) 1 (gethash 5 h) 2 (gethash #\x h) 3) (list (gethash 'k h) (gethash 5 h) (gethash #\x h)))
;=> (1 2 3)
(let ((h (make-hash-table :test 'equal))) (setf (gethash "abc" h) 1) (list (gethash "abc" h) (gethash "ABC" h) (gethash (copy-seq "abc") h)))
;=> (1 nil 1)
(let ((h (make-hash-table :test 'equal))) (setf (gethash '(1 (2 "x") . 3) h) 'deep) (gethash (list 1 (list 2 "x")) h))
;=> nil
;=> nil
(let ((h (make-hash-table :test 'equal))) (setf (gethash '(1 (2 "x") . 3) h) 'deep) (gethash (list* 1 (list 2 (copy-seq "x")) 3) h))
;=> deep
;=> t
(let ((h (make-hash-table :test 'equal))) (setf (gethash 1 h) 'int) (list (gethash 1.0 h) (gethash 1 h)))
;=> (nil int)
(let ((h (make-hash-table :test 'equal))) (setf (gethash #(1 2) h) 'v) (gethash #(1 2) h))
;=> nil
;=> nil
(let ((h (make-hash-table :test 'equal)) (v (vector 1 2))) (setf (gethash v h) 'v) (gethash v h))
;=> v
;=> t
(let ((h (make-hash-table :test 'equal))) (setf (gethash #\a h) 'c) (list (gethash #\a h) (gethash #\A h)))
;=> (c nil)
(let ((h (make-hash-table :test 'equal))) (setf (gethash 'sym h) 's (gethash nil h) 'n) (list (gethash 'sym h) (gethash nil h) (gethash '() h)))
;=> (s n n)
(let ((h (make-hash-table :test 'equalp))) (setf (gethash "abc" h) 1) (list (gethash "ABC" h) (gethash "aBc" h) (gethash "abd" h)))
;=> (1 1 nil)
(let ((h (make-hash-table :test 'equalp))) (setf (gethash 1 h) 'one) (list (gethash 1.0 h) (gethash 1 h) (gethash 2 h)))
;=> (one one nil)
(let ((h (make-hash-table :test 'equalp))) (setf (gethash 2.5 h) 'x) (list (gethash 2.5 h) (gethash 2 h)))
;=> (x nil)
(let ((h (make-hash-table :test 'equalp))) (setf (gethash 0 h) 'zero) (list (gethash -0.0 h) (gethash 0.0 h)))
;=> (zero zero)
(let ((h (make-hash-table :test 'equalp))) (setf (gethash #\a h) 'c) (list (gethash #\A h) (gethash #\b h)))
;=> (c nil)
(let ((h (make-hash-table :test 'equalp))) (setf (gethash '(1 "ab" #\c) h) 'l) (gethash (list 1.0 "AB" #\C) h))
;=> l
;=> t
(let ((h (make-hash-table :test 'equalp))) (setf (gethash #(1 2 "x") h) 'v) (list (gethash (vector 1 2 "X") h) (gethash (vector 1 2) h)))
;=> (v nil)
(let ((h (make-hash-table :test 'equalp))) (setf (gethash "ab" h) 's) (gethash (vector #\A #\b) h))
;=> s
;=> t
(let ((h (make-hash-table :test 'equalp))) (setf (gethash 'foo h) 1) (list (gethash 'foo h) (gethash 'bar h)))
;=> (1 nil)
(let ((h (make-hash-table :test 'equalp)) (a (make-hash-table)) (b (make-hash-table))) (setf (gethash 1 a) 'x (gethash 1 b) 'x) (setf (gethash a h) 'tab) (gethash b h))
;=> tab
;=> t
(let ((h (make-hash-table :test 'equalp)) (a (make-hash-table)) (b (make-hash-table))) (setf (gethash 1 a) 'x (gethash 1 b) 'y) (setf (gethash a h) 'tab) (gethash b h))
;=> nil
;=> nil
(let ((h (make-hash-table :test 'equal))) (setf (gethash "a" h) 1 (gethash "a" h) 2) (list (hash-table-count h) (gethash "a" h)))
;=> (1 2)
(let ((h (make-hash-table :test 'equalp))) (setf (gethash "a" h) 1 (gethash "A" h) 2) (list (hash-table-count h) (gethash "a" h)))
;=> (1 2)
;; maphash: insertion order
(let ((h (make-hash-table)) (acc nil)) (setf (gethash 'c h) 3 (gethash 'a h) 1 (gethash 'b h) 2) (maphash (lambda (k v) (push (list k v) acc)) h) (nreverse acc))
;=> ((c 3) (a 1) (b 2))
(let ((h (make-hash-table)) (acc nil)) (dotimes (i 20) (setf (gethash (- 20 i) h) i)) (maphash (lambda (k v) (declare (ignore v)) (push k acc)) h) (nreverse acc))
;=> (20 19 18 17 16 15 14 13 12 11 10 9 8 7 6 5 4 3 2 1)
(let ((h (make-hash-table)) (acc nil)) (setf (gethash 1 h) 'a (gethash 2 h) 'b (gethash 3 h) 'c) (remhash 2 h) (setf (gethash 4 h) 'd (gethash 2 h) 'b2) (maphash (lambda (k v) (push (cons k v) acc)) h) (nreverse acc))
;=> ((1 . a) (4 . d) (3 . c) (2 . b2))
(let ((h (make-hash-table)) (acc nil)) (setf (gethash 1 h) 'a) (setf (gethash 1 h) 'z) (setf (gethash 2 h) 'b) (maphash (lambda (k v) (push (cons k v) acc)) h) (nreverse acc))
;=> ((1 . z) (2 . b))
(maphash (lambda (k v) (list k v)) (make-hash-table))
;=> nil
(let ((h (make-hash-table))) (setf (gethash 1 h) 10 (gethash 2 h) 20) (maphash (lambda (k v) (setf (gethash k h) (* v 2))) h) (list (gethash 1 h) (gethash 2 h)))
;=> (20 40)
(let ((h (make-hash-table))) (dotimes (i 10) (setf (gethash i h) i)) (maphash (lambda (k v) (when (oddp v) (remhash k h))) h) (let ((acc nil)) (maphash (lambda (k v) (declare (ignore v)) (push k acc)) h) (nreverse acc)))
;=> (0 2 4 6 8)
(let ((h (make-hash-table)) (n 0)) (dotimes (i 5) (setf (gethash i h) i)) (maphash (lambda (k v) (declare (ignore k v)) (incf n) (clrhash h)) h) (list n (hash-table-count h)))
;=> (1 0)
(let ((h (make-hash-table)) (s 0)) (setf (gethash 'a h) 1 (gethash 'b h) 2) (maphash #'(lambda (k v) (declare (ignore k)) (incf s v)) h) s)
;=> 3
(defun sum-values (k v) (declare (ignore k)) (incf *total* v))
(defvar *total* 0)
(let ((h (make-hash-table))) (setf (gethash 'a h) 5 (gethash 'b h) 7) (maphash 'sum-values h) *total*)
;=> 12
(maphash #'list 'not-a-table)
;!E-TYPE
(maphash 'no-such-function-xyz (make-hash-table))
;!E-UNBOUND
;; many entries, removal and re-insertion
(let ((h (make-hash-table))) (dotimes (i 1000) (setf (gethash i h) (* i i))) (list (hash-table-count h) (gethash 999 h) (gethash 500 h)))
;=> (1000 998001 250000)
(let ((h (make-hash-table :test 'equal))) (dotimes (i 200) (setf (gethash (format nil "k~d" i) h) i)) (list (hash-table-count h) (gethash "k0" h) (gethash "k199" h) (gethash "k200" h)))
;=> (200 0 199 nil)
(let ((h (make-hash-table))) (dotimes (i 100) (setf (gethash i h) i)) (dotimes (i 95) (remhash i h)) (setf (gethash 'new h) 'n) (let ((acc nil)) (maphash (lambda (k v) (declare (ignore v)) (push k acc)) h) (list (hash-table-count h) (nreverse acc))))
;=> (6 (new 95 96 97 98 99))
(let ((h (make-hash-table))) (dotimes (r 50) (dotimes (i 10) (setf (gethash i h) r)) (dotimes (i 10) (remhash i h))) (setf (gethash 'x h) 1) (list (hash-table-count h) (gethash 'x h) (gethash 3 h)))
;=> (1 1 nil)
(let ((h (make-hash-table :test 'equalp))) (dotimes (i 50) (setf (gethash (list i (format nil "s~d" i)) h) i)) (list (hash-table-count h) (gethash (list 7.0 "S7") h) (gethash (list 49 "s49") h)))
;=> (50 7 49)
;; sxhash
(integerp (sxhash "abc"))
;=> t
(= (sxhash "abc") (sxhash (copy-seq "abc")))
;=> t
(= (sxhash '(1 2 (3))) (sxhash (list 1 2 (list 3))))
;=> t
(= (sxhash 'foo) (sxhash 'foo))
;=> t
(>= (sxhash 12345) 0)
;=> t
(>= (sxhash -1.5) 0)
;=> t
;; with loop and the prelude
(let ((h (make-hash-table))) (setf (gethash 'x h) 1 (gethash 'y h) 2) (loop for k being the hash-keys of h collect k))
;=> (x y)
(let ((h (make-hash-table))) (setf (gethash 'x h) 1 (gethash 'y h) 2) (loop for v being the hash-values of h sum v))
;=> 3
(let ((h (make-hash-table))) (setf (gethash 'x h) 1 (gethash 'y h) 2) (loop for k being the hash-keys of h using (hash-value v) collect (cons k v)))
;=> ((x . 1) (y . 2))
(let ((h (make-hash-table :test #'equal))) (dolist (w '("a" "b" "a" "c" "a" "b")) (incf (gethash w h 0))) (let ((acc nil)) (maphash (lambda (k v) (push (list k v) acc)) h) (nreverse acc)))
;=> (("a" 3) ("b" 2) ("c" 1))
(let ((h (make-hash-table))) (setf (gethash 'a h) 1) (multiple-value-bind (v found) (gethash 'a h) (list v found)))
;=> (1 t)
(let ((h (make-hash-table))) (equalp h h))
;=> t
(let ((a (make-hash-table :test 'equal)) (b (make-hash-table :test 'equal))) (setf (gethash "k" a) 1 (gethash "k" b) 1.0) (list (equalp a b) (equal a b)))
;=> (t nil)
;; freed slots are reused, most recently freed first (SBCL's order)
(defun hash-keys-of (h) (let (acc) (maphash (lambda (k v) (declare (ignore v)) (push k acc)) h) (nreverse acc)))
(defun table-of (n) (let ((h (make-hash-table))) (dotimes (i n) (setf (gethash (1+ i) h) t)) h))
(let ((h (table-of 4))) (remhash 1 h) (remhash 3 h) (setf (gethash 'x h) t) (hash-keys-of h))
;=> (2 x 4)
(let ((h (table-of 3))) (remhash 1 h) (remhash 2 h) (remhash 3 h) (setf (gethash 'x h) t (gethash 'y h) t) (hash-keys-of h))
;=> (y x)
(let ((h (table-of 3))) (remhash 3 h) (setf (gethash 'x h) t (gethash 'y h) t) (hash-keys-of h))
;=> (1 2 x y)
(let ((h (table-of 7))) (remhash 2 h) (dotimes (i 10) (setf (gethash (+ 100 i) h) t)) (hash-keys-of h))
;=> (1 100 3 4 5 6 7 101 102 103 104 105 106 107 108 109)
(let ((h (table-of 3))) (clrhash h) (setf (gethash 'x h) t (gethash 'y h) t) (hash-keys-of h))
;=> (x y)
(let ((h (table-of 20))) (dotimes (i 20) (when (evenp i) (remhash (1+ i) h))) (dotimes (i 12) (setf (gethash (+ 100 i) h) t)) (hash-keys-of h))
;=> (109 2 108 4 107 6 106 8 105 10 104 12 103 14 102 16 101 18 100 20 110 111)
(let ((h (table-of 5))) (remhash 2 h) (setf (gethash 2 h) 'back) (hash-keys-of h))
;=> (1 2 3 4 5)
(let ((h (table-of 5))) (maphash (lambda (k v) (declare (ignore v)) (when (evenp k) (remhash k h))) h) (setf (gethash 'a h) t (gethash 'b h) t (gethash 'c h) t) (hash-keys-of h))
;=> (1 b 3 a 5 c)

