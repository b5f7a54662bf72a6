;;;; Strings and characters (language.md, Builtins). Expected values from SBCL 2.2.9.
;; string: designators
(string "abc")
;=> "abc"
(string 'abc)
;=> "ABC"
(string #\a)
;=> "a"
(string nil)
;=> "NIL"
(string :key)
;=> "KEY"
(let ((s "abc")) (eq s (string s)))
;=> t
(string 1)
;!E-TYPE
(string '(a))
;!E-TYPE
;; string= and string/=
(string= "abc" "abc")
;=> t
(string= "abc" "abd")
;=> nil
(string= "abc" "ABC")
;=> nil
(string= "abc" "ab")
;=> nil
(string= "" "")
;=> t
(string= 'abc "ABC")
;=> t
(string= #\a "a")
;=> t
(string= "abc" "xabcx" :start2 1 :end2 4)
;=> t
(string= "xabcx" "abc" :start1 1 :end1 4)
;=> t
(string= "abc" "abc" :end1 2 :end2 2)
;=> t
(string= "abc" "abc" :end1 nil)
;=> t
(string= "abc" "abd" :end1 2 :end2 2)
;=> t
(string= "abc" "abc" :end1 5)
;!E-TYPE
(string= "abc" "abc" :start1 2 :end1 1)
;!E-TYPE
(string= "abc" "abc" :start1 -1)
;!E-TYPE
(string= "abc" "abc" :start1 "0")
;!E-TYPE
(string= "abc" "abc" :foo 1)
;!E-ARITY
(string= "abc" "abc" :start1)
;!E-ARITY
(string= 1 "1")
;!E-TYPE
(string= "abc")
;!E-ARITY
(string/= "abc" "abc")
;=> nil
(string/= "abc" "abd")
;=> 2
(string/= "abc" "abcd")
;=> 3
(string/= "abcd" "abc")
;=> 3
(string/= "xabc" "abc" :start1 1)
;=> nil
;; ordering: the mismatch index in string1
(string< "abc" "abd")
;=> 2
(string< "abc" "abc")
;=> nil
(string< "ab" "abc")
;=> 2
(string< "abc" "ab")
;=> nil
(string< "" "a")
;=> 0
(string< "a" "")
;=> nil
(string< "abc" "b")
;=> 0
(string< "B" "a")
;=> 0
(string< "xabc" "abd" :start1 1)
;=> 3
(string< "abcz" "abd" :end1 3)
;=> 2
(string> "abd" "abc")
;=> 2
(string> "abc" "ab")
;=> 2
(string> "ab" "abc")
;=> nil
(string> "abc" "abc")
;=> nil
(string<= "abc" "abc")
;=> 3
(string<= "abc" "abd")
;=> 2
(string<= "abd" "abc")
;=> nil
(string>= "abc" "abc")
;=> 3
(string>= "abc" "abb")
;=> 2
(string>= "abb" "abc")
;=> nil
(string<= "xxabc" "abc" :start1 2)
;=> 5
(string< 'apple 'banana)
;=> 0
;; case-insensitive
(string-equal "ABC" "abc")
;=> t
(string-equal "abc" "abd")
;=> nil
(string-equal 'foo "FoO")
;=> t
(string-not-equal "abc" "abD")
;=> 2
(string-not-equal "abc" "ABC")
;=> nil
(string-lessp "abc" "ABD")
;=> 2
(string-lessp "ABC" "abc")
;=> nil
(string-lessp "[" "a")
;=> 0
(string-lessp "a" "[")
;=> nil
(string-greaterp "b" "A")
;=> 0
(string-greaterp "_" "A")
;=> nil
(string-not-greaterp "a" "B")
;=> 0
(string-not-greaterp "abc" "ABC")
;=> 3
(string-not-lessp "b" "a")
;=> 0
(string-not-lessp "a" "B")
;=> nil
(string-equal "xABCx" "abc" :start1 1 :end1 4)
;=> t
;; upcase, downcase, capitalize
(string-upcase "abc")
;=> "ABC"
(string-upcase "Hello, World!")
;=> "HELLO, WORLD!"
(string-upcase "abc" :start 1)
;=> "aBC"
(string-upcase "abc" :start 1 :end 2)
;=> "aBc"
(string-upcase "abc" :end nil)
;=> "ABC"
(string-upcase 'abc)
;=> "ABC"
(string-upcase #\a)
;=> "A"
(string-downcase "HeLLo")
;=> "hello"
(string-downcase 'abc)
;=> "abc"
(string-downcase "ABC" :start 1)
;=> "Abc"
(string-downcase "ABCDEF" :start 2 :end 4)
;=> "ABcdEF"
(string-capitalize "hello world")
;=> "Hello World"
(string-capitalize "HELLO WORLD")
;=> "Hello World"
(string-capitalize "hello 1st WORLD foo-bar b2b x_y")
;=> "Hello 1st World Foo-Bar B2b X_Y"
(string-capitalize "don't stop")
;=> "Don'T Stop"
(string-capitalize "hello world" :start 3)
;=> "helLo World"
(string-capitalize "HELLO WORLD" :start 3 :end 8)
;=> "HELLo WoRLD"
(string-capitalize "")
;=> ""
(string-capitalize 'foo-bar)
;=> "Foo-Bar"
(let ((s "abc")) (list (string-upcase s) s))
;=> ("ABC" "abc")
(let ((s "abc")) (eq s (string-upcase s)))
;=> nil
(string-upcase "abc" :start 4)
;!E-TYPE
(string-upcase "abc" :start 2 :end 1)
;!E-TYPE
(string-upcase 12)
;!E-TYPE
(string-upcase "abc" :bad 1)
;!E-ARITY
(let ((s (copy-seq "hello world"))) (list (nstring-upcase s) s))
;=> ("HELLO WORLD" "HELLO WORLD")
(let ((s (copy-seq "hello world"))) (eq s (nstring-upcase s :start 6)))
;=> t
(let ((s (copy-seq "HELLO"))) (nstring-downcase s :start 1 :end 3) s)
;=> "HelLO"
(let ((s (copy-seq "hello big world"))) (nstring-capitalize s) s)
;=> "Hello Big World"
(nstring-upcase 'abc)
;!E-TYPE
;; trimming
(string-trim " " "  a b  ")
;=> "a b"
(string-trim '(#\a #\b) "abxyba")
;=> "xy"
(string-trim "ab" "ababab")
;=> ""
(string-trim " " "")
;=> ""
(string-trim "" "abc")
;=> "abc"
(string-left-trim "ab" "abxyba")
;=> "xyba"
(string-right-trim #(#\a) "abxyba")
;=> "abxyb"
(string-right-trim "ab" "abxyba")
;=> "abxy"
(string-trim '(#\Space #\Tab #\Newline) (format nil "~c x ~c" #\Tab #\Newline))
;=> "x"
(string-trim " " 'abc)
;=> "ABC"
(string-trim "A" 'abca)
;=> "BC"
(string-trim '(1 #\a) "aba")
;!E-TYPE
(string-trim '(#\a 1) "aba")
;!E-TYPE
(string-trim (list 1) "")
;=> ""
(string-trim (vector #\a 1) "ab")
;!E-TYPE
(string-left-trim (list #\a 1) "aab")
;!E-TYPE
(string-trim 1 "abc")
;!E-TYPE
(string-trim " " 1)
;!E-TYPE
;; char and schar
(char "abc" 0)
;=> #\a
(char "abc" 2)
;=> #\c
(schar "abc" 1)
;=> #\b
(let ((s (copy-seq "abc"))) (setf (char s 1) #\X) s)
;=> "aXc"
(let ((s (copy-seq "abc"))) (setf (schar s 0) #\z) s)
;=> "zbc"
(char "abc" 3)
;!E-TYPE
(char "abc" -1)
;!E-TYPE
(char 'abc 0)
;!E-TYPE
(char "abc" 1.0)
;!E-TYPE
(char "abc")
;!E-ARITY
;; schar wants a simple string: one with a fill pointer or adjustable is not (SBCL: type-error)
(schar (make-array 5 :element-type 'character :initial-contents "abcde" :fill-pointer 3) 1)
;!E-TYPE
(schar (make-array 3 :element-type 'character :initial-contents "abc" :adjustable t) 0)
;!E-TYPE
(schar (make-string 2 :initial-element #\q) 1)
;=> #\q
(char (make-array 5 :element-type 'character :initial-contents "abcde" :fill-pointer 3) 4)
;=> #\e
;; make-string
(make-string 3 :initial-element #\x)
;=> "xxx"
(make-string 0)
;=> ""
(length (make-string 4))
;=> 4
(char-code (char (make-string 2) 0))
;=> 0
(make-string 2 :initial-element #\a :element-type 'character)
;=> "aa"
(make-string -1)
;!E-TYPE
(make-string 2 :initial-element 1)
;!E-TYPE
(make-string 'a)
;!E-TYPE
;; predicates
(stringp "a")
;=> t
(stringp #\a)
;=> nil
(stringp 'a)
;=> nil
(stringp (make-string 2))
;=> t
(simple-string-p "abc")
;=> t
(characterp #\a)
;=> t
(characterp "a")
;=> nil
(characterp 97)
;=> nil
;; characters: codes and case
(char-code #\a)
;=> 97
(char-code #\Space)
;=> 32
(char-code #\Newline)
;=> 10
(code-char 97)
;=> #\a
(code-char 65)
;=> #\A
(code-char 32)
;=> #\ 
(char-code (code-char 1114111))
;=> 1114111
(code-char -1)
;!E-TYPE
(code-char 1114112)
;!E-TYPE
(code-char #\a)
;!E-TYPE
(char-code 1)
;!E-TYPE
(char-int #\A)
;=> 65
(char-upcase #\a)
;=> #\A
(char-upcase #\A)
;=> #\A
(char-upcase #\1)
;=> #\1
(char-downcase #\A)
;=> #\a
(char-downcase #\z)
;=> #\z
(char-code (char-upcase (code-char 233)))
;=> 201
(char-code (char-downcase (code-char 931)))
;=> 963
(char-code (char-upcase (code-char 223)))
;=> 223
(char-code (char-upcase (code-char 255)))
;=> 376
(char-code (char-upcase (code-char 1102)))
;=> 1070
(char-upcase "a")
;!E-TYPE
;; comparisons, n-ary
(char= #\a)
;=> t
(char= #\a #\a)
;=> t
(char= #\a #\a #\a)
;=> t
(char= #\a #\a #\b)
;=> nil
(char= #\a #\A)
;=> nil
(char/= #\a #\b #\c)
;=> t
(char/= #\a #\b #\a)
;=> nil
(char/= #\a)
;=> t
(char< #\a #\b #\c)
;=> t
(char< #\a #\c #\b)
;=> nil
(char< #\a #\a)
;=> nil
(char> #\c #\b #\a)
;=> t
(char> #\c #\c)
;=> nil
(char<= #\a #\a #\b)
;=> t
(char<= #\b #\a)
;=> nil
(char>= #\c #\c #\a)
;=> t
(char>= #\a #\b)
;=> nil
(char-equal #\a #\A)
;=> t
(char-equal #\a #\A #\a #\b)
;=> nil
(char-not-equal #\a #\A)
;=> nil
(char-not-equal #\a #\b #\C)
;=> t
(char-lessp #\a #\B #\c)
;=> t
(char-lessp #\[ #\a)
;=> t
(char-greaterp #\b #\A)
;=> t
(char-greaterp #\_ #\A)
;=> nil
(char-not-lessp #\b #\B #\a)
;=> t
(char-not-greaterp #\a #\B #\b)
;=> t
(char=)
;!E-ARITY
(char= #\a 1)
;!E-TYPE
(char< 1 2)
;!E-TYPE
(char-equal "a" "A")
;!E-TYPE
;; classes
(alpha-char-p #\a)
;=> t
(alpha-char-p #\Z)
;=> t
(alpha-char-p #\1)
;=> nil
(alpha-char-p #\-)
;=> nil
(alpha-char-p (code-char 233))
;=> t
(alpha-char-p (code-char 20013))
;=> t
(alphanumericp #\1)
;=> t
(alphanumericp #\a)
;=> t
(alphanumericp #\_)
;=> nil
(alphanumericp #\Space)
;=> nil
(upper-case-p #\A)
;=> t
(upper-case-p #\a)
;=> nil
(upper-case-p #\1)
;=> nil
(lower-case-p #\a)
;=> t
(lower-case-p #\A)
;=> nil
(both-case-p #\a)
;=> t
(both-case-p #\1)
;=> nil
(both-case-p (code-char 223))
;=> nil
(graphic-char-p #\a)
;=> t
(graphic-char-p #\Space)
;=> t
(graphic-char-p #\Newline)
;=> nil
(graphic-char-p (code-char 127))
;=> nil
(graphic-char-p (code-char 160))
;=> t
(standard-char-p #\a)
;=> t
(standard-char-p #\Tab)
;=> nil
(alpha-char-p 1)
;!E-TYPE
(upper-case-p "A")
;!E-TYPE
;; digits
(digit-char-p #\7)
;=> 7
(digit-char-p #\0)
;=> 0
(digit-char-p #\a)
;=> nil
(digit-char-p #\a 16)
;=> 10
(digit-char-p #\F 16)
;=> 15
(digit-char-p #\g 16)
;=> nil
(digit-char-p #\Z 36)
;=> 35
(digit-char-p #\7 7)
;=> nil
(digit-char-p #\1 2)
;=> 1
(digit-char-p (code-char 1635))
;=> 3
(digit-char-p #\7 37)
;!E-TYPE
(digit-char-p #\7 1)
;!E-TYPE
(digit-char-p 7)
;!E-TYPE
(digit-char 7)
;=> #\7
(digit-char 0)
;=> #\0
(digit-char 11 16)
;=> #\B
(digit-char 11)
;=> nil
(digit-char 35 36)
;=> #\Z
(digit-char 36 36)
;=> nil
(digit-char 10 37)
;!E-TYPE
(digit-char -1)
;!E-TYPE
(digit-char #\1)
;!E-TYPE
;; names
(char-name #\a)
;=> "LATIN_SMALL_LETTER_A"
(char-name #\A)
;=> "LATIN_CAPITAL_LETTER_A"
(char-name #\Space)
;=> "Space"
(char-name #\Newline)
;=> "Newline"
(char-name #\Tab)
;=> "Tab"
(char-name (code-char 0))
;=> "Nul"
(char-name (code-char 1))
;=> "Soh"
(char-name (code-char 8))
;=> "Backspace"
(char-name (code-char 12))
;=> "Page"
(char-name (code-char 13))
;=> "Return"
(char-name (code-char 27))
;=> "Esc"
(char-name (code-char 127))
;=> "Rubout"
(char-name #\0)
;=> "DIGIT_ZERO"
(char-name #\()
;=> "LEFT_PARENTHESIS"
(char-name (code-char 128))
;=> "C80"
(char-name (code-char 160))
;=> "NO-BREAK_SPACE"
(char-name (code-char 233))
;=> "LATIN_SMALL_LETTER_E_WITH_ACUTE"
(name-char "Space")
;=> #\ 
(name-char 'space)
;=> #\ 
(name-char "newline")
;=> #\Newline
(name-char "Linefeed")
;=> #\Newline
(name-char "TAB")
;=> #\Tab
(name-char "Return")
;=> #\Return
(name-char "Nul")
;=> #\Nul
(name-char "Null")
;=> #\Nul
(name-char "Rubout")
;=> #\Rubout
(name-char "Del")
;=> #\Rubout
(name-char "escape")
;=> #\Esc
(name-char "Esc")
;=> #\Esc
(name-char "Page")
;=> #\Page
(name-char "Backspace")
;=> #\Backspace
(name-char "LATIN_SMALL_LETTER_A")
;=> #\a
(name-char "latin_capital_letter_z")
;=> #\Z
(name-char "DIGIT_SEVEN")
;=> #\7
(name-char "U+41")
;=> #\A
(name-char "u+7a")
;=> #\z
(name-char "U41")
;=> #\A
(char-code (name-char "Soh"))
;=> 1
(char-code (name-char "^A"))
;=> 1
(name-char "xyz")
;=> nil
(name-char "a")
;=> nil
(name-char "")
;=> nil
(char-code (name-char "NO-BREAK_SPACE"))
;=> 160
(char-code (name-char "C80"))
;=> 128
(name-char (char-name #\x))
;=> #\x
(name-char 1)
;!E-TYPE
(character "a")
;=> #\a
(character 'b)
;=> #\B
(character #\c)
;=> #\c
(character "ab")
;!E-TYPE
(character 65)
;!E-TYPE
;; strings with fill pointers: only the active part counts (char reads any index)
(defvar *fp* (make-array 5 :element-type 'character :initial-element #\a :fill-pointer 2))
(string= *fp* "aa")
;=> t
(string< *fp* "aaa")
;=> 2
(string-upcase *fp*)
;=> "AA"
(string-trim "" *fp*)
;=> "aa"
(length (string *fp*))
;=> 2
(char *fp* 4)
;=> #\a
(let ((h (make-hash-table :test 'equal))) (setf (gethash "aa" h) 1) (gethash *fp* h))
;=> 1
;=> t
(let ((h (make-hash-table :test 'equalp))) (setf (gethash "AA" h) 1) (gethash *fp* h))
;=> 1
;=> t

