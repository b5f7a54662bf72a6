;;;; Conses and lists: accessors, construction, splicing, plists, mapping,
;;;; sets, alists and trees. Expected values are SBCL's; circular lists are
;;;; an E-TYPE here where SBCL would loop forever.

;;; cons, car, cdr and their compositions
(cons 1 2)
;=> (1 . 2)
(cons 1 nil)
;=> (1)
(cons nil nil)
;=> (nil)
(car '(1 2))
;=> 1
(car nil)
;=> nil
(cdr '(1 2))
;=> (2)
(cdr nil)
;=> nil
(car '(1 . 2))
;=> 1
(cdr '(1 . 2))
;=> 2
(car 3)
;!E-TYPE
(cdr "abc")
;!E-TYPE
(car #(1 2))
;!E-TYPE
(caar '((1 2) 3))
;=> 1
(cadr '(1 2 3))
;=> 2
(cdar '((1 2) 3))
;=> (2)
(cddr '(1 2 3))
;=> (3)
(caaar '(((1))))
;=> 1
(caadr '(0 (1 2)))
;=> 1
(cadar '((1 2)))
;=> 2
(caddr '(1 2 3))
;=> 3
(cdaar '(((1 2))))
;=> (2)
(cdadr '(0 (1 2)))
;=> (2)
(cddar '((1 2 3)))
;=> (3)
(cdddr '(1 2 3 4))
;=> (4)
(caaaar '((((x)))))
;=> x
(caaadr '(0 ((x))))
;=> x
(caadar '((0 (x))))
;=> x
(caaddr '(0 0 (x)))
;=> x
(cadaar '(((0 x))))
;=> x
(cadadr '(0 (0 x)))
;=> x
(caddar '((0 0 x)))
;=> x
(cadddr '(0 0 0 x))
;=> x
(cdaaar '((((0 . x)))))
;=> x
(cdaadr '(0 ((0 . x))))
;=> x
(cdadar '((0 (0 . x))))
;=> x
(cdaddr '(0 0 (0 . x)))
;=> x
(cddaar '(((0 0 . x))))
;=> x
(cddadr '(0 (0 0 . x)))
;=> x
(cdddar '((0 0 0 . x)))
;=> x
(cddddr '(0 0 0 0 . x))
;=> x
(cadr nil)
;=> nil
(cddddr '(1 2))
;=> nil
(cadr '(1 . 2))
;!E-TYPE
(caar '(1 2))
;!E-TYPE
(cdddr '(1 2 . 3))
;!E-TYPE
(cadddr 5)
;!E-TYPE
(car)
;!E-ARITY
(car '(1) '(2))
;!E-ARITY
(funcall #'cadr '(1 2))
;=> 2
(mapcar #'caar '(((a)) ((b))))
;=> (a b)

;;; first ... tenth, rest
(first '(1 2 3))
;=> 1
(first nil)
;=> nil
(second '(1 2 3))
;=> 2
(third '(1 2 3))
;=> 3
(fourth '(1 2 3))
;=> nil
(fifth '(1 2 3 4 5))
;=> 5
(sixth '(1 2 3 4 5 6))
;=> 6
(seventh '(1 2 3 4 5 6 7))
;=> 7
(eighth '(1 2 3 4 5 6 7 8 9 10 11))
;=> 8
(ninth '(1 2 3 4 5 6 7 8 9 10 11))
;=> 9
(tenth '(1 2 3 4 5 6 7 8 9 10 11))
;=> 10
(tenth '(1 2 3))
;=> nil
(first 5)
;!E-TYPE
(second '(1 . 2))
;!E-TYPE
(third '(1 2 . 3))
;!E-TYPE
(rest '(1 2 3))
;=> (2 3)
(rest nil)
;=> nil
(rest '(1 . 2))
;=> 2
(rest 5)
;!E-TYPE

;;; nth, nthcdr
(nth 0 '(a b c))
;=> a
(nth 2 '(a b c))
;=> c
(nth 3 '(a b c))
;=> nil
(nth 10 nil)
;=> nil
(nth -1 '(a b))
;!E-TYPE
(nth 1.0 '(a b))
;!E-TYPE
(nth 0 5)
;!E-TYPE
(nth 3 '(1 2 . 3))
;!E-TYPE
(nth 1 '(1 2 . 3))
;=> 2
(nthcdr 0 '(a b c))
;=> (a b c)
(nthcdr 2 '(a b c))
;=> (c)
(nthcdr 5 '(a b c))
;=> nil
(nthcdr 2 '(1 2 . 3))
;=> 3
(nthcdr 3 '(1 2 . 3))
;!E-TYPE
(nthcdr 0 5)
;!E-TYPE
(nthcdr -1 '(1))
;!E-TYPE
(nthcdr 'a '(1))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (nth 1000000001 l))
;=> 3
(let ((l (list 0 1 2 3 4))) (setf (cdr (last l)) (cddr l)) (list (nth 7 l) (car (nthcdr 100 l))))
;=> (4 4)

;;; last, butlast, nbutlast
(last '(1 2 3))
;=> (3)
(last nil)
;=> nil
(last '(1 2 . 3))
;=> (2 . 3)
(last '(1 2 3) 2)
;=> (2 3)
(last '(1 2 3) 0)
;=> nil
(last '(1 2 . 3) 0)
;=> 3
(last '(1 2 3) 10)
;=> (1 2 3)
(last 5)
;!E-TYPE
(last '(1 2) -1)
;!E-TYPE
(last '(1 2) 1.5)
;!E-TYPE
(butlast '(1 2 3))
;=> (1 2)
(butlast '(1 2 3) 2)
;=> (1)
(butlast '(1 2 3) 3)
;=> nil
(butlast '(1 2 3) 0)
;=> (1 2 3)
(butlast nil)
;=> nil
(butlast '(1 2 . 3))
;=> (1)
(butlast '(1 2 3 . 4) 2)
;=> (1)
(butlast '(1 2 . 3) 0)
;=> (1 2 . 3)
(butlast 5)
;!E-TYPE
(butlast '(1 2) -1)
;!E-TYPE
(let ((l (list 1 2 3 4))) (list (nbutlast l 2) l))
;=> ((1 2) (1 2))
(nbutlast (list 1 2 3) 5)
;=> nil
(nbutlast (list 1 2 3) 0)
;=> (1 2 3)
(nbutlast (list 1))
;=> nil
(nbutlast nil)
;=> nil
(let ((l (list 1 2 3))) (eq (nbutlast l) l))
;=> t

;;; list, list*, make-list
(list)
;=> nil
(list 1 2 3)
;=> (1 2 3)
(list 1 '(2) "three" #\4 5.0)
;=> (1 (2) "three" #\4 5.0)
(list* 1)
;=> 1
(list* 1 2)
;=> (1 . 2)
(list* 1 2 '(3 4))
;=> (1 2 3 4)
(list* nil)
;=> nil
(list*)
;!E-ARITY
(make-list 3)
;=> (nil nil nil)
(make-list 0)
;=> nil
(make-list 2 :initial-element 'x)
;=> (x x)
(make-list 2 :initial-element '(a))
;=> ((a) (a))
(make-list -1)
;!E-TYPE
(make-list 2.0)
;!E-TYPE
(make-list 2 :foo 1)
;!E-ARITY
(make-list 2 :initial-element)
;!E-ARITY

;;; append, nconc, revappend, nreconc
(append)
;=> nil
(append nil)
;=> nil
(append '(1 2))
;=> (1 2)
(append '(1) '(2 3) '(4))
;=> (1 2 3 4)
(append '(1) nil '(2) nil)
;=> (1 2)
(append '(1) 2)
;=> (1 . 2)
(append nil nil 3)
;=> 3
(append 5)
;=> 5
(append 1 '(2))
;!E-TYPE
(append '(1 . 2) '(3))
;!E-TYPE
(append '(1 2) '(3 . 4))
;=> (1 2 3 . 4)
(let ((tail (list 3))) (eq (cdr (append '(1) tail)) tail))
;=> t
(let ((a (list 1 2))) (append a '(3)) a)
;=> (1 2)
(nconc)
;=> nil
(nconc nil)
;=> nil
(nconc (list 1 2) (list 3) nil (list 4 5))
;=> (1 2 3 4 5)
(nconc (list 1 2) nil (list 3) 4)
;=> (1 2 3 . 4)
(nconc nil nil (list 1))
;=> (1)
(nconc nil 5)
;=> 5
(nconc (list 1) 5)
;=> (1 . 5)
(nconc 5 (list 1))
;!E-TYPE
(nconc (list 1) 5 (list 2))
;!E-TYPE
(nconc (cons 1 2) (list 3))
;=> (1 3)
(let ((a (list 1 2)) (b (list 3))) (nconc a b) (list a b))
;=> ((1 2 3) (3))
(revappend '(1 2 3) '(4 5))
;=> (3 2 1 4 5)
(revappend nil '(1))
;=> (1)
(revappend '(1 2) 3)
;=> (2 1 . 3)
(revappend '(1 2 . 3) nil)
;!E-TYPE
(revappend 5 nil)
;!E-TYPE
(nreconc (list 1 2 3) '(4 5))
;=> (3 2 1 4 5)
(nreconc nil 5)
;=> 5

;;; reverse, nreverse (lists, vectors, strings)
(reverse '(1 2 3))
;=> (3 2 1)
(reverse nil)
;=> nil
(reverse '((1 2) 3))
;=> (3 (1 2))
(reverse "abc")
;=> "cba"
(reverse "")
;=> ""
(reverse #(1 2 3))
;=> #(3 2 1)
(reverse #())
;=> #()
(reverse '(1 2 . 3))
;!E-TYPE
(reverse 5)
;!E-TYPE
(reverse 'a)
;!E-TYPE
(nreverse (list 1 2 3 4))
;=> (4 3 2 1)
(nreverse nil)
;=> nil
(nreverse (vector 1 2 3))
;=> #(3 2 1)
(nreverse (copy-seq "hello"))
;=> "olleh"
(let ((v (make-array 5 :initial-contents '(1 2 3 4 5) :fill-pointer 3))) (list (reverse v) (nreverse v) (aref v 3)))
;=> (#(3 2 1) #(3 2 1) 4)
(let ((s (make-array 4 :element-type 'character :initial-contents "abcd" :fill-pointer 2))) (reverse s))
;=> "ba"
(nreverse 5)
;!E-TYPE
(let ((v (vector 1 2 3))) (eq v (nreverse v)))
;=> t

;;; length, list-length, endp
(length nil)
;=> 0
(length '(1 2 3))
;=> 3
(length "abcd")
;=> 4
(length #(1 2))
;=> 2
(length '(1 2 . 3))
;!E-TYPE
(length 5)
;!E-TYPE
(length (make-array 5 :fill-pointer 2))
;=> 2
(list-length nil)
;=> 0
(list-length '(1 2 3))
;=> 3
(list-length '(1 2 . 3))
;!E-TYPE
(list-length 5)
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (list-length l))
;=> nil
(let ((l (list 1 2 3 4))) (setf (cdr (last l)) (cdr l)) (list-length l))
;=> nil
(let ((l (list 1))) (setf (cdr l) l) (list-length l))
;=> nil
(endp nil)
;=> t
(endp '(1))
;=> nil
(endp 5)
;!E-TYPE
(endp "a")
;!E-TYPE

;;; copy-list, copy-alist, copy-tree, ldiff, tailp
(copy-list '(1 2 3))
;=> (1 2 3)
(copy-list nil)
;=> nil
(copy-list '(1 2 . 3))
;=> (1 2 . 3)
(copy-list 5)
;!E-TYPE
(let ((l (list 1 2))) (eq l (copy-list l)))
;=> nil
(let* ((a (list (list 1))) (b (copy-list a))) (eq (car a) (car b)))
;=> t
(copy-alist '((a . 1) (b . 2)))
;=> ((a . 1) (b . 2))
(copy-alist '((a . 1) b nil (c 2)))
;=> ((a . 1) b nil (c 2))
(copy-alist nil)
;=> nil
(let* ((a (list (cons 1 2))) (b (copy-alist a))) (list (eq (car a) (car b)) (equal a b)))
;=> (nil t)
(copy-alist 5)
;!E-TYPE
(copy-tree '((1 . 2) (3 (4 . 5)) . 6))
;=> ((1 . 2) (3 (4 . 5)) . 6)
(copy-tree 5)
;=> 5
(copy-tree nil)
;=> nil
(let* ((a (list (list 1 2) 3)) (b (copy-tree a))) (list (equal a b) (eq (car a) (car b))))
;=> (t nil)
(let ((l (list 1 2 3 4))) (ldiff l (cddr l)))
;=> (1 2)
(let ((l (list 1 2 3))) (ldiff l nil))
;=> (1 2 3)
(ldiff '(1 2 3) '(2 3))
;=> (1 2 3)
(ldiff '(1 2 . 3) 3)
;=> (1 2)
(ldiff '(1 2 . 3) 4)
;=> (1 2 . 3)
(ldiff nil nil)
;=> nil
(ldiff 5 nil)
;!E-TYPE
(let ((l (list 1 2 3))) (tailp (cdr l) l))
;=> t
(tailp '(2 3) '(1 2 3))
;=> nil
(tailp nil '(1 2))
;=> t
(tailp 3 '(1 2 . 3))
;=> t
(tailp 4 '(1 2 . 3))
;=> nil
(tailp nil nil)
;=> t
(tailp nil 5)
;!E-TYPE

;;; getf and remf
(getf '(a 1 b 2) 'b)
;=> 2
(getf '(a 1 b 2) 'c)
;=> nil
(getf '(a 1 b 2) 'c 'default)
;=> default
(getf nil 'a 7)
;=> 7
(getf '(a 1 a 2) 'a)
;=> 1
(getf '(:x 1 :y nil) :y 5)
;=> nil
(getf '(a 1 b) 'a)
;=> 1
(getf '(a 1 b) 'c)
;!E-TYPE
(getf '(a 1 . b) 'c)
;!E-TYPE
(getf 5 'a)
;!E-TYPE
(getf '("a" 1) "a" 'none)
;=> none
(getf '(a 1) 'a 5 6)
;!E-ARITY
(let ((p (list :a 1 :b 2))) (setf (getf p :c) 3) p)
;=> (:c 3 :a 1 :b 2)
(let ((p (list :a 1 :b 2))) (setf (getf p :a) 10) p)
;=> (:a 10 :b 2)
(defvar *pl* (list :a 1 :b 2 :c 3))
(remf *pl* :b)
;=> t
*pl*
;=> (:a 1 :c 3)
(remf *pl* :z)
;=> nil
*pl*
;=> (:a 1 :c 3)
(remf *pl* :a)
;=> t
*pl*
;=> (:c 3)
(remf *pl* :c)
;=> t
*pl*
;=> nil
(let ((p (list 'x 1 'y 2 'x 3))) (list (remf p 'x) p))
;=> (t (y 2 x 3))
(let ((p (list 'x 1 'y))) (remf p 'z))
;!E-TYPE
(let ((p (list 'x 1 'y))) (remf p 'x))
;=> t
(let ((p nil)) (list (remf p 'x) p))
;=> (nil nil)

;;; get-properties
(get-properties '(a 1 b 2 c 3) '(c b))
;=> b
;=> 2
;=> (b 2 c 3)
(get-properties '(a 1 b 2) '(x))
;=> nil
;=> nil
;=> nil
(get-properties nil '(x))
;=> nil
;=> nil
;=> nil
(get-properties '(a 1 b) '(x))
;!E-TYPE
(get-properties '(a 1 b) '(a))
;=> a
;=> 1
;=> (a 1 b)
(get-properties 5 '(a))
;!E-TYPE

;;; mapcar, mapc, mapcan, maplist, mapl, mapcon
(mapcar #'1+ '(1 2 3))
;=> (2 3 4)
(mapcar #'+ '(1 2 3) '(10 20))
;=> (11 22)
(mapcar #'list '(a b) '(1 2) '(x y z))
;=> ((a 1 x) (b 2 y))
(mapcar #'car nil)
;=> nil
(mapcar 'car '((a) (b)))
;=> (a b)
(mapcar (lambda (x) (* x x)) '(1 2 3))
;=> (1 4 9)
(mapcar #'+ '(1 2 . 3) '(10 20 30))
;!E-TYPE
(mapcar #'+ '(1 2) '(10 20 . 30))
;=> (11 22)
(mapcar #'+ '(1 2 . 3) '(10 20))
;=> (11 22)
(mapcar #'car 5)
;!E-TYPE
(mapcar #'1+)
;!E-ARITY
(mapcar 'no-such-function-xyz '(1))
;!E-UNBOUND
(mapcar #'floor '(1.5 2.5))
;=> (1 2)
(multiple-value-list (mapcar #'floor '(7)))
;=> ((7))
(mapc #'1+ '(1 2 3))
;=> (1 2 3)
(let ((acc nil)) (mapc (lambda (x y) (push (+ x y) acc)) '(1 2 3) '(10 20)) acc)
;=> (22 11)
(mapc #'list nil '(1 2))
;=> nil
(mapcan (lambda (x) (if (evenp x) (list x x))) '(1 2 3 4))
;=> (2 2 4 4)
(mapcan #'list '(1 2) '(a b))
;=> (1 a 2 b)
(mapcan #'identity '(nil nil))
;=> nil
(mapcan (lambda (x) x) (list (list 1) nil (list 2 3)))
;=> (1 2 3)
(mapcan #'identity (list (list 1) 2))
;=> (1 . 2)
(mapcan #'identity (list 1))
;=> 1
(mapcan #'identity (list (list 1) 2 nil))
;=> (1 . 2)
(mapcan #'identity (list 1 (list 2)))
;=> (2)
(maplist #'identity '(1 2 3))
;=> ((1 2 3) (2 3) (3))
(maplist #'append '(1 2) '(a b c))
;=> ((1 2 a b c) (2 b c))
(maplist #'length nil)
;=> nil
(mapl #'identity '(1 2 3))
;=> (1 2 3)
(let ((acc nil)) (mapl (lambda (l) (push (length l) acc)) '(a b c)) acc)
;=> (1 2 3)
(mapcon #'copy-list '(1 2 3))
;=> (1 2 3 2 3 3)
(mapcon (lambda (l) (list (length l))) '(a b c))
;=> (3 2 1)
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (mapcar #'+ l '(10 20 30 40 50)))
;=> (11 22 33 41 52)
(let ((l (list 1 2))) (setf (cdr (last l)) l) (let ((n 0)) (mapc (lambda (x y) (incf n (* x y))) '(1 1 1) l) n))
;=> 4

;;; member, member-if, member-if-not, adjoin
(member 2 '(1 2 3))
;=> (2 3)
(member 4 '(1 2 3))
;=> nil
(member 2 nil)
;=> nil
(member "b" '("a" "b"))
;=> nil
(member "b" '("a" "b") :test #'equal)
;=> ("b")
(member "b" '("a" "b") :test 'equal)
;=> ("b")
(member "B" '("a" "b") :test #'equalp)
;=> ("b")
(member 2 '(1 2 3) :test #'<)
;=> (3)
(member 2 '(1 2 3) :test-not #'eql)
;=> (1 2 3)
(member 2 '((1) (2) (3)) :key #'car)
;=> ((2) (3))
(member 2.0 '(1 2 3))
;=> nil
(member 2.0 '(1 2 3) :test #'=)
;=> (2 3)
(member 3 '(1 2 . 3))
;!E-TYPE
(member 2 '(1 2 . 3))
;=> (2 . 3)
(member 1 5)
;!E-TYPE
(member 1 '(1) :test #'eql :test-not #'eql)
;!E-ARITY
(member 1 '(1) :bogus 1)
;!E-ARITY
(member 1 '(1) :key)
;!E-ARITY
(member 1 '(1) :bogus 1 :allow-other-keys t)
;=> (1)
(member-if #'evenp '(1 2 3))
;=> (2 3)
(member-if #'evenp '(1 3 5))
;=> nil
(member-if #'plusp '((-1) (2)) :key #'car)
;=> ((2))
(member-if #'evenp '(1 3 . 5))
;!E-TYPE
(member-if-not #'oddp '(1 2 3))
;=> (2 3)
(member-if-not #'numberp '(1 a 2))
;=> (a 2)
(adjoin 1 '(2 3))
;=> (1 2 3)
(adjoin 2 '(2 3))
;=> (2 3)
(adjoin '(1) '((1) 2))
;=> ((1) (1) 2)
(adjoin '(1) '((1) 2) :test #'equal)
;=> ((1) 2)
(adjoin '(2 x) '((1 a) (2 b)) :key #'car)
;=> ((1 a) (2 b))
(adjoin 2 '((1) (2)) :key #'car)
;!E-TYPE
(adjoin 1 nil)
;=> (1)
(adjoin 1 5)
;!E-TYPE
(let ((l (list 1 2))) (eq l (adjoin 1 l)))
;=> t
(let ((s nil)) (pushnew 1 s) (pushnew 2 s) (pushnew 1 s) s)
;=> (2 1)

;;; union, intersection, set-difference, set-exclusive-or, subsetp
(union '(1 2 3 4) '(3 4 5 6))
;=> (2 1 3 4 5 6)
(union '(1 2 3) '(4 5 6 7 8))
;=> (8 7 6 5 4 1 2 3)
(union '(1 2 3 4 5) '(4 5 6))
;=> (3 2 1 4 5 6)
(union nil '(1 2))
;=> (2 1)
(union '(1 2) nil)
;=> (2 1)
(union nil nil)
;=> nil
(union '(1 1 2) '(2 3 3))
;=> (1 1 2 3 3)
(union '("a" "b") '("b" "c") :test #'equal)
;=> ("a" "b" "c")
(union '((a 1) (b 2)) '((b 3) (c 4)) :key #'car)
;=> ((a 1) (b 3) (c 4))
(union '(1 2) 5)
;!E-TYPE
(union 5 '(1 2))
;!E-TYPE
(union '(1 2 . 3) '(1))
;!E-TYPE
(union '(1) '(2) :test #'eql :test-not #'eql)
;!E-ARITY
(union (loop for i below 25 collect i) (loop for i from 20 below 50 collect i))
;=> (49 48 47 46 45 44 43 42 41 40 39 38 37 36 35 34 33 32 31 30 29 28 27 26 25 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24)
(union (list 1 2 3) (loop for i from 0 below 110 collect (- 110 i)))
;=> (4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 1 2 3)
(union (list* 1 1 (loop for i from 100 below 130 collect i)) (loop for i from 0 below 30 collect i))
;=> (129 128 127 126 125 124 123 122 121 120 119 118 117 116 115 114 113 112 111 110 109 108 107 106 105 104 103 102 101 100 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29)
(length (union (loop for i below 300 collect (format nil "~a" i)) (loop for i from 200 below 400 collect (format nil "~a" i)) :test #'equal))
;=> 400
(nunion (list 1 2 3 4) (list 3 4 5 6))
;=> (2 1 3 4 5 6)
(nunion (list 1 2) (list 3 4 5))
;=> (5 4 3 1 2)
(nunion nil (list 1 2))
;=> (2 1)
(nunion (list 1 2) nil)
;=> (2 1)
(intersection '(1 2 3 4) '(4 3 7))
;=> (4 3)
(intersection '(1 2) nil)
;=> nil
(intersection nil '(1 2))
;=> nil
(intersection '(1 2 2 3) '(2 3))
;=> (3 2 2)
(intersection '("a" "b") '("B") :test #'equalp)
;=> ("b")
(intersection '((a . 1) (b . 2)) '((b . 3)) :key #'car)
;=> ((b . 2))
(intersection '(1 2 3) '(2) :test #'<)
;=> (1)
(intersection '(1 2 3) '(2) :test-not #'eql)
;=> (3 1)
(intersection 5 '(1 2))
;!E-TYPE
(nintersection (list 1 2 3 4) (list 4 3 7))
;=> (4 3)
(nintersection (list 1 2) nil)
;=> nil
(set-difference '(1 2 3 4 5) '(2 4))
;=> (5 3 1)
(set-difference '(1 2) nil)
;=> (1 2)
(set-difference nil '(1 2))
;=> nil
(set-difference '("a" "b") '("a") :test #'string=)
;=> ("b")
(set-difference '((a . 1) (b . 2)) '((a . 9)) :key #'car)
;=> ((b . 2))
(let ((l (list 1 2))) (eq l (set-difference l nil)))
;=> t
(set-difference '(1 2) 5)
;!E-TYPE
(nset-difference (list 1 2 3 4 5) (list 2 4))
;=> (5 3 1)
(nset-difference (list 1 2) nil)
;=> (1 2)
(set-exclusive-or '(1 2 3) '(2 3 4 5))
;=> (5 4 1)
(set-exclusive-or nil '(1 2))
;=> (2 1)
(set-exclusive-or '(1 2) nil)
;=> (2 1)
(set-exclusive-or '(1 2) '(1 2))
;=> nil
(set-exclusive-or '((a . 1) (b . 2)) '((b . 3) (c . 4)) :key #'car)
;=> ((c . 4) (a . 1))
(set-exclusive-or '(1 2 3) '(2 3 4) :test (lambda (x y) (= x (1- y))))
;=> nil
(nset-exclusive-or (list 1 2 3) (list 2 3 4 5))
;=> (1 4 5)
(nset-exclusive-or (list 1 2 2 3) (list 2 4))
;=> (1 3 4)
(nset-exclusive-or (list 1 2) (list 1 2))
;=> nil
(nset-exclusive-or nil (list 1))
;=> (1)
(nset-exclusive-or (list 1 2 3) (list 3 3 4) :test #'=)
;=> (1 2 4)
(subsetp '(1 2) '(2 1 3))
;=> t
(subsetp '(1 4) '(2 1 3))
;=> nil
(subsetp nil '(1))
;=> t
(subsetp nil nil)
;=> t
(subsetp '(1) nil)
;=> nil
(subsetp '("a") '("a" "b") :test #'equal)
;=> t
(subsetp '((a 1)) '((a 2) (b 3)) :key #'car)
;=> t
(subsetp 5 '(1))
;!E-TYPE

;;; assoc, rassoc and friends, acons, pairlis
(assoc 'b '((a . 1) (b . 2)))
;=> (b . 2)
(assoc 'c '((a . 1) (b . 2)))
;=> nil
(assoc 'b '((a . 1) nil (b . 2)))
;=> (b . 2)
(assoc 'b '((a . 1) 5 (b . 2)))
;!E-TYPE
(assoc 'a '((a . 1) 5))
;=> (a . 1)
(assoc 'b 5)
;!E-TYPE
(assoc nil '((nil . 1)))
;=> (nil . 1)
(assoc nil '(nil (nil . 2)))
;=> (nil . 2)
(assoc "b" '(("a" . 1) ("b" . 2)))
;=> nil
(assoc "b" '(("a" . 1) ("b" . 2)) :test #'equal)
;=> ("b" . 2)
(assoc 2 '((1 . a) (3 . b)) :test #'<)
;=> (3 . b)
(assoc 1 '((1 . a) (2 . b)) :test-not #'eql)
;=> (2 . b)
(assoc 3 '(((1 2) . a) ((3 4) . b)) :key #'car)
;=> ((3 4) . b)
(assoc 'x '((a . 1) . 2))
;!E-TYPE
(assoc 'a '((a . 1) . 2))
;=> (a . 1)
(rassoc 2 '((a . 1) (b . 2)))
;=> (b . 2)
(rassoc 2 '((a . 1) nil (b . 2)))
;=> (b . 2)
(rassoc "x" '((a . "x")) :test #'string=)
;=> (a . "x")
(rassoc 5 '((a . 1)))
;=> nil
(assoc-if #'evenp '((1 . a) (2 . b)))
;=> (2 . b)
(assoc-if #'evenp '((1 . a) nil (3 . b)))
;=> nil
(assoc-if #'plusp '(((-1) . a) ((2) . b)) :key #'car)
;=> ((2) . b)
(assoc-if-not #'evenp '((2 . a) (3 . b)))
;=> (3 . b)
(rassoc-if #'evenp '((a . 1) (b . 2)))
;=> (b . 2)
(rassoc-if-not #'evenp '((a . 2) (b . 3)))
;=> (b . 3)
(acons 'a 1 nil)
;=> ((a . 1))
(acons 'a 1 '((b . 2)))
;=> ((a . 1) (b . 2))
(acons 'a 1 5)
;=> ((a . 1) . 5)
(pairlis '(a b) '(1 2))
;=> ((b . 2) (a . 1))
(pairlis '(a b) '(1 2) '((c . 3)))
;=> ((b . 2) (a . 1) (c . 3))
(pairlis nil nil)
;=> nil
(pairlis nil nil '((x . 1)))
;=> ((x . 1))
(pairlis '(a) '(1 2))
;!E-TYPE
(pairlis '(a . b) '(1))
;!E-TYPE
(pairlis 5 nil)
;!E-TYPE

;;; subst, subst-if, sublis, nsubst, tree-equal
(subst 'x 1 '(1 (1 2) . 1))
;=> (x (x 2) . x)
(subst 'x 'a '(a b (a c) . a))
;=> (x b (x c) . x)
(subst 'x '(1) '((1) 2 (1)))
;=> ((1) 2 (1))
(subst 'x '(1) '((1) 2 (1)) :test #'equal)
;=> (x 2 x)
(subst 'x 2 '((1 . 2) (3 . 4)) :key (lambda (x) (if (consp x) (car x) x)))
;=> ((1 . x) (3 . 4))
(subst 'x 1 5)
;=> 5
(subst 'x 5 5)
;=> x
(subst 'x nil '(1 2))
;=> (1 2 . x)
(subst 'x 1 '(1 2) :test-not #'eql)
;=> x
(let ((tree (list 1 (list 2 3)))) (eq (cadr tree) (cadr (subst 'x 1 tree))))
;=> t
(subst-if 'x #'numberp '(1 (a 2) . 3))
;=> (x (a x) . x)
(subst-if 'x #'consp '(1 (2)))
;=> x
(subst-if 0 #'evenp '(1 (2 (3 4))) :key (lambda (x) (if (numberp x) x 1)))
;=> (1 (0 (3 0)))
(subst-if-not 'x #'consp '(1 (2)))
;=> (x (x . x) . x)
(nsubst 'x 1 (list 1 (list 1 2) 3))
;=> (x (x 2) 3)
(nsubst 'x 'b (list 'a 'b (cons 'c 'b)))
;=> (a x (c . x))
(nsubst 'x '(2) (list 1 (list 2) 3) :test #'equal)
;=> (1 x 3)
(nsubst-if 'x #'numberp (list 'a 1 (list 2 'b)))
;=> (a x (x b))
(nsubst-if-not 'x #'symbolp (list 'a 1 (list 2 'b)))
;=> x
(let ((tree (list 1 (list 1 2)))) (nsubst 'x 1 tree) tree)
;=> (x (x 2))
(sublis '((a . 1) (b . 2)) '(a (b c) . a))
;=> (1 (2 c) . 1)
(sublis '((a . 1)) '(x y))
;=> (x y)
(sublis nil '(a b))
;=> (a b)
(sublis '(((1) . x)) '((1) 2) :test #'equal)
;=> (x 2)
(sublis '((1 . one)) '((1) 2) :key (lambda (x) (if (consp x) (car x) x)))
;=> (one 2)
(sublis '((a . 1) 5) '(a))
;!E-TYPE
(nsublis '((a . 1) (b . 2)) (list 'a (list 'b 'c) 'a))
;=> (1 (2 c) 1)
(tree-equal '(1 (2 3)) '(1 (2 3)))
;=> t
(tree-equal '(1 (2 3)) '(1 (2 4)))
;=> nil
(tree-equal '(1 2) '(1 2 3))
;=> nil
(tree-equal '(1 . 2) '(1 . 2))
;=> t
(tree-equal '("a") '("a"))
;=> nil
(tree-equal '("a") '("a") :test #'equal)
;=> t
(tree-equal '(1 2) '(1.0 2.0) :test #'=)
;!E-TYPE
(tree-equal 5 5)
;=> t
(tree-equal nil nil)
;=> t
(tree-equal '(1 2) '(3 4) :test-not #'eql)
;=> nil
(tree-equal '(1) '(1) :test #'eql :test-not #'eql)
;!E-ARITY
(tree-equal '(1) '(1) :key #'car)
;!E-ARITY
(tree-equal '((1 2) 3) '((1 2) 3) :test #'eq)
;=> t
(tree-equal '(1 (2 (3))) '(1 (2 (3 . 4))))
;=> nil

;;; predicates
(listp nil)
;=> t
(listp '(1))
;=> t
(listp 5)
;=> nil
(consp nil)
;=> nil
(consp '(1))
;=> t
(atom nil)
;=> t
(atom 5)
;=> t
(atom '(1))
;=> nil
(null nil)
;=> t
(null '(1))
;=> nil

;;; push and pop (prelude macros over these builtins)
(let ((l nil)) (push 1 l) (push 2 l) (list (pop l) l))
;=> (2 (1))
(let ((l (list 1 2 3))) (list (pop (cdr l)) l))
;=> (2 (1 3))
(let ((l (list (list 1 2)))) (push 0 (car l)) (pop (cdar l)) l)
;=> ((0 2))

;;; circular lists: an E-TYPE where SBCL would loop forever
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (length l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (last l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (member 4 l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (car (member 3 l)))
;=> 3
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (assoc 'x l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (append l '(4)))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (copy-list l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (reverse l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (mapcar #'1+ l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (mapc #'+ l l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (union l '(1)))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (butlast l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (nconc l (list 4)))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (nconc l (list 4) (list 5)))
;!E-TYPE
(let ((l (list :a 1 :b 2))) (setf (cdr (last l)) l) (getf l :c))
;!E-TYPE
(let ((l (list :a 1 :b 2))) (setf (cdr (last l)) l) (getf l :b))
;=> 2
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (copy-tree l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (subst 'x 9 l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (tree-equal l l))
;=> t
(let ((l (list 1 2 3)) (m (list 1 2 3))) (setf (cdr (last l)) l (cdr (last m)) m) (tree-equal l m))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (tailp nil l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (ldiff l nil))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (nreverse l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (revappend l nil))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (pairlis l '(1 2 3)))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (adjoin 9 l))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (remf l 9))
;!E-TYPE
(let ((l (list 1 2 3))) (setf (cdr (last l)) l) (mapcan #'list l '(a b)))
;=> (1 a 2 b)
