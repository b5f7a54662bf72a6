;;;; format: every directive, its parameters and modifiers, checked against SBCL.
;;;; Floats print as SBCL does with *read-default-float-format* double-float.
;;;; Every expectation is SBCL 2.2.9's value for the form, except where marked.

;;; ~a and ~s
(format nil "~a" 'foo)
;=> "FOO"
(format nil "~s" 'foo)
;=> "FOO"
(format nil "~a" "str")
;=> "str"
(format nil "~s" "str")
;=> "\"str\""
(format nil "~a ~s" #\x #\x)
;=> "x #\\x"
(format nil "~a" '(1 "two" #\3 four))
;=> "(1 two 3 FOUR)"
(format nil "~s" '(1 "two" #\3 four))
;=> "(1 \"two\" #\\3 FOUR)"
(format nil "~a" nil)
;=> "NIL"
(format nil "~:a" nil)
;=> "()"
(format nil "~:s" nil)
;=> "()"
(format nil "~:a" '(nil))
;=> "(NIL)"
(format nil "~s" :key)
;=> ":KEY"
(format nil "~a" 1.5)
;=> "1.5"
(format nil "~a" 1d7)
;=> "1.0e7"
(format nil "~a" 1d-4)
;=> "1.0e-4"
(format nil "~a" 123456.789)
;=> "123456.789"
(format nil "~a" -0.0)
;=> "-0.0"
(format nil "~a" #(1 2))
;=> "#(1 2)"
(format nil "~10a|" "ab")
;=> "ab        |"
(format nil "~10@a|" "ab")
;=> "        ab|"
(format nil "~5,3a|" "ab")
;=> "ab   |"
(format nil "~10,4a|" 'abc)
;=> "ABC        |"
(format nil "~,,2a|" "ab")
;=> "ab  |"
(format nil "~,,2,'*a|" "ab")
;=> "ab**|"
(format nil "~10,,,'-a|" "ab")
;=> "ab--------|"
(format nil "~2a|" "abcdef")
;=> "abcdef|"
(format nil "~6s|" "ab")
;=> "\"ab\"  |"
(format nil "~6@s|" "ab")
;=> "  \"ab\"|"
(format nil "~v,,,'.a|" 8 "ab")
;=> "ab......|"
(format nil "~va|" nil "ab")
;=> "ab|"
(format nil "~5:a|" nil)
;=> "()   |"
(format nil "~w" '(a "b"))
;=> "(A \"b\")"

;;; ~d ~b ~o ~x
(format nil "~d" 42)
;=> "42"
(format nil "~d" -42)
;=> "-42"
(format nil "~5d|" 42)
;=> "   42|"
(format nil "~5,'0d" 42)
;=> "00042"
(format nil "~5,'0d" -42)
;=> "00-42"
(format nil "~@d" 42)
;=> "+42"
(format nil "~@d" -42)
;=> "-42"
(format nil "~@d" 0)
;=> "+0"
(format nil "~:d" 1234567)
;=> "1,234,567"
(format nil "~:d" -1234567)
;=> "-1,234,567"
(format nil "~:d" 123)
;=> "123"
(format nil "~@:d" 1234567)
;=> "+1,234,567"
(format nil "~,,'.,4:d" 123456789)
;=> "1.2345.6789"
(format nil "~,,' :d" 1000000)
;=> "1 000 000"
(format nil "~12,'*:d" 1234567)
;=> "***1,234,567"
(format nil "~2d" 12345)
;=> "12345"
(format nil "~d" 9223372036854775807)
;=> "9223372036854775807"
(format nil "~:d" -9223372036854775808)
;=> "-9,223,372,036,854,775,808"
(format nil "~d" 1.5)
;=> "1.5"
(format nil "~5d|" 1.5)
;=> "1.5|"
(format nil "~d" 'abc)
;=> "ABC"
(format nil "~d" "str")
;=> "str"
(format nil "~b" 10)
;=> "1010"
(format nil "~8,'0b" 10)
;=> "00001010"
(format nil "~o" 64)
;=> "100"
(format nil "~x" 255)
;=> "FF"
(format nil "~x" -255)
;=> "-FF"
(format nil "~5,'0x" -255)
;=> "00-FF"
(format nil "~:x" 4294967295)
;=> "FF,FFF,FFF"
(format nil "~,,' ,4:b" 255)
;=> "1111 1111"
(format nil "~x" 1.5)
;=> "1.5"
(format nil "~vd|" 6 1)
;=> "     1|"
(format nil "~v,vd|" 6 #\x 1)
;=> "xxxxx1|"
(format nil "~#d|" 7 1 2)
;=> "  7|"

;;; ~r
(format nil "~r" 0)
;=> "zero"
(format nil "~r" 7)
;=> "seven"
(format nil "~r" 13)
;=> "thirteen"
(format nil "~r" 40)
;=> "forty"
(format nil "~r" 123)
;=> "one hundred twenty-three"
(format nil "~r" -45)
;=> "negative forty-five"
(format nil "~r" 1000000)
;=> "one million"
(format nil "~r" 1234567890)
;=> "one billion two hundred thirty-four million five hundred sixty-seven thousand eight hundred ninety"
(format nil "~r" 9223372036854775807)
;=> "nine quintillion two hundred twenty-three quadrillion three hundred seventy-two trillion thirty-six billion eight hundred fifty-four million seven hundred seventy-five thousand eight hundred seven"
(format nil "~:r" 0)
;=> "zeroth"
(format nil "~:r" 1)
;=> "first"
(format nil "~:r" 2)
;=> "second"
(format nil "~:r" 12)
;=> "twelfth"
(format nil "~:r" 20)
;=> "twentieth"
(format nil "~:r" 23)
;=> "twenty-third"
(format nil "~:r" 100)
;=> "one hundredth"
(format nil "~:r" 111)
;=> "one hundred eleventh"
(format nil "~:r" 1000)
;=> "one thousandth"
(format nil "~@r" 1994)
;=> "MCMXCIV"
(format nil "~@r" 3999)
;=> "MMMCMXCIX"
(format nil "~@r" 4)
;=> "IV"
(format nil "~:@r" 1994)
;=> "MDCCCCLXXXXIIII"
(format nil "~:@r" 4999)
;=> "MMMMDCCCCLXXXXVIIII"
(format nil "~2r" 10)
;=> "1010"
(format nil "~16r" 255)
;=> "FF"
(format nil "~36r" 1295)
;=> "ZZ"
(format nil "~8,5,'0r" 8)
;=> "00010"
(format nil "~3,,,' ,2:r" 100)
;=> "1 02 01"
(format nil "~7@r" 100)
;=> "+202"

;;; ~c
(format nil "~c" #\a)
;=> "a"
(format nil "~c" #\Space)
;=> " "
(format nil "~:c" #\Space)
;=> "Space"
(format nil "~:c" #\a)
;=> "a"
(format nil "~:c" #\Newline)
;=> "Newline"
(format nil "~:c" #\Tab)
;=> "Tab"
(format nil "~:c" (code-char 0))
;=> "Nul"
(format nil "~:c" (code-char 127))
;=> "Rubout"
(format nil "~@c" #\a)
;=> "#\\a"
(format nil "~@c" #\Space)
;=> "#\\ "
(format nil "~@c" #\Newline)
;=> "#\\Newline"
(format nil "~:@c" #\Space)
;=> "Space"

;;; ~p
(format nil "~d dog~:p" 1)
;=> "1 dog"
(format nil "~d dog~:p" 2)
;=> "2 dogs"
(format nil "~d dog~:p" 0)
;=> "0 dogs"
(format nil "~d pon~:@p" 1)
;=> "1 pony"
(format nil "~d pon~:@p" 3)
;=> "3 ponies"
(format nil "~p" 1)
;=> ""
(format nil "~p" 1.0)
;=> "s"
(format nil "~@p" 2)
;=> "ies"

;;; ~f
(format nil "~f" 1.5)
;=> "1.5"
(format nil "~f" 0.1)
;=> "0.1"
(format nil "~f" 1d10)
;=> "10000000000.0"
(format nil "~f" 1d-5)
;=> "0.00001"
(format nil "~f" 1d22)
;=> "10000000000000000000000.0"
(format nil "~f" 123.456)
;=> "123.456"
(format nil "~f" -2.5)
;=> "-2.5"
(format nil "~f" 0.0)
;=> "0.0"
(format nil "~f" -0.0)
;=> "-0.0"
(format nil "~f" 5)
;=> "5.0"
(format nil "~f" -7)
;=> "-7.0"
(format nil "~,2f" 2.675)
;=> "2.67"
(format nil "~,2f" 0.125)
;=> "0.13"
(format nil "~,2f" 0.375)
;=> "0.38"
(format nil "~,2f" 1.005)
;=> "1.00"
(format nil "~,1f" 0.05)
;=> "0.1"
(format nil "~,1f" 0.25)
;=> "0.3"
(format nil "~,1f" 0.96)
;=> "1.0"
(format nil "~,1f" 9.96)
;=> "10.0"
(format nil "~,0f" 2.5)
;=> "3."
(format nil "~,0f" 0.5)
;=> "1."
(format nil "~,0f" 3.7)
;=> "4."
(format nil "~,2f" 0.0)
;=> "0.00"
(format nil "~,2f" 0.001)
;=> "0.00"
(format nil "~,3f" 1d-10)
;=> "0.000"
(format nil "~,2f" 5)
;=> "5.00"
(format nil "~,2f" 123456789.125)
;=> "123456789.13"
(format nil "~,20f" 0.1)
;=> "0.10000000000000000000"
(format nil "~,2f" -1.5)
;=> "-1.50"
(format nil "~@f" 1.5)
;=> "+1.5"
(format nil "~,2@f" 3.14159)
;=> "+3.14"
(format nil "~8f|" 3.14159265)
;=> "3.141593|"
(format nil "~8,3f|" 3.14159265)
;=> "   3.142|"
(format nil "~8,3f|" -3.14159265)
;=> "  -3.142|"
(format nil "~3f|" 123.456)
;=> "123.|"
(format nil "~4,2f|" 0.5)
;=> "0.50|"
(format nil "~4,2f|" 12.5)
;=> "12.50|"
(format nil "~5,2,,'*f|" 123.456)
;=> "*****|"
(format nil "~8,2,,,'0f" 3.5)
;=> "00003.50"
(format nil "~1,2f|" 0.5)
;=> ".50|"
(format nil "~,2,2f" 3.14159)
;=> "314.16"
(format nil "~,2,-1f" 3.14159)
;=> "0.31"
(format nil "~f" 'abc)
;=> "ABC"
(format nil "~8f|" "ab")
;=> "ab      |"
(format nil "~,vf" 3 2.0)
;=> "2.000"
(format nil "~f" 1d100)
;=> "10000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000.0"
(format nil "~f" 1.0e-7)
;=> "0.0000001"

;;; ~e
(format nil "~e" 1.5)
;=> "1.4999999999999997e+0"
(format nil "~e" 1234.5)
;=> "1.2344999999999999e+3"
(format nil "~e" 0.0)
;=> "0.0e+0"
(format nil "~e" 1d-20)
;=> "1.0e-20"
(format nil "~e" 1d300)
;=> "1.0e+300"
(format nil "~e" -0.5)
;=> "-5.0e-1"
(format nil "~,3e" 1234.5)
;=> "1.234e+3"
(format nil "~,3e" 9.9999)
;=> "10.000e+0"
(format nil "~10,3e|" -0.000123)
;=> " -1.230e-4|"
(format nil "~,2,3e" 1234.5)
;=> "1.23e+003"
(format nil "~,2,,2e" 1234.5)
;=> "12.3e+2"
(format nil "~,2,,0e" 1234.5)
;=> "0.12e+4"
(format nil "~,2,,-1e" 1234.5)
;=> "0.01e+5"
(format nil "~@,2e" 12.0)
;!E-TYPE
(format nil "~,2,,,,,'de" 12.0)
;=> "1.20d+1"
(format nil "~6,2,,,'*e" 123456.0)
;=> "******"
(format nil "~9,2,1,,'*e" 1d100)
;=> "*********"
;; Deliberate difference: integers become doubles, not single-floats (SBCL: "1.0f+2").
(format nil "~e" 100)
;=> "1.0e+2"
(format nil "~e" 'sym)
;=> "SYM"

;;; ~g
(format nil "~g" 1.5)
;=> "1.5    "
(format nil "~g" 0.5)
;=> "0.5    "
(format nil "~g" 123456789.0)
;=> "123456789.    "
(format nil "~g" 1d-5)
;=> "1.00000e-5"
(format nil "~g" 1d20)
;=> "100000000000000000000.    "
(format nil "~,2g" 0.5)
;=> "0.50    "
(format nil "~,3g" 1234.5)
;=> "1.234e+3"
(format nil "~10,3g|" 3.14159)
;=> "  3.14    |"
(format nil "~g" 0.0)
;=> "0.    "

;;; ~$
(format nil "~$" 3.14159)
;=> "3.14"
(format nil "~$" 5)
;=> "5.00"
(format nil "~$" -0.5)
;=> "-0.50"
(format nil "~2,3,10$" 3.14159)
;=> "    003.14"
(format nil "~,,10,'*$" 3.5)
;=> "******3.50"
(format nil "~@$" 3.5)
;=> "+3.50"
(format nil "~:@$" -3.5)
;=> "-3.50"
(format nil "~,,10:$" -3.5)
;=> "-     3.50"
(format nil "~3$" 2.0)
;=> "2.000"
(format nil "~$" 1d20)
;=> "100000000000000000000.00"

;;; ~% ~& ~| ~~ ~newline
(substitute #\/ #\Newline (format nil "a~%b"))
;=> "a/b"
(substitute #\/ #\Newline (format nil "~3%"))
;=> "///"
(substitute #\/ #\Newline (format nil "~&a"))
;=> "a"
(substitute #\/ #\Newline (format nil "a~&b"))
;=> "a/b"
(substitute #\/ #\Newline (format nil "a~%~&b"))
;=> "a/b"
(substitute #\/ #\Newline (format nil "~2&a"))
;=> "/a"
(substitute #\/ #\Newline (format nil "a~2&b"))
;=> "a//b"
(substitute #\/ #\Newline (format nil "~0&a"))
;=> "a"
(format nil "~~ ~3~")
;=> "~ ~~~"
(substitute #\/ #\Page (format nil "a~|b"))
;=> "a/b"
(format nil "a~
           b")
;=> "ab"
(format nil "a~:
           b")
;=> "a           b"
(substitute #\/ #\Newline (format nil "a~@
           b"))
;=> "a/b"

;;; ~t
(format nil "ab~10tc")
;=> "ab        c"
(format nil "abcdefghijkl~10tc")
;=> "abcdefghijkl c"
(format nil "abcdefghijkl~10,4tc")
;=> "abcdefghijkl  c"
(format nil "abcdefghij~10,4tc")
;=> "abcdefghij    c"
(format nil "ab~3@tc")
;=> "ab   c"
(format nil "ab~3,8@tc")
;=> "ab      c"
(substitute #\/ #\Newline (format nil "x~%ab~5tc"))
;=> "x/ab   c"

;;; ~*
(format nil "~a ~* ~a" 1 2 3)
;=> "1  3"
(format nil "~a ~2* ~a" 1 2 3 4)
;=> "1  4"
(format nil "~a ~:* ~a" 1)
;=> "1  1"
(format nil "~a ~a ~2:* ~a" 1 2)
;=> "1 2  1"
(format nil "~a ~a ~@* ~a" 1 2)
;=> "1 2  1"
(format nil "~a ~a ~1@* ~a" 1 2)
;=> "1 2  2"
(format nil "~{~a~*~^ ~}" '(a 1 b 2))
;=> "A B"

;;; ~( ~)
(format nil "~(Hello WORLD~)")
;=> "hello world"
(format nil "~:@(hello world~)")
;=> "HELLO WORLD"
(format nil "~:(hello 2nd wORLD-wide~)")
;=> "Hello 2nd World-Wide"
(format nil "~@(hello 2nd WORLD~)")
;=> "Hello 2nd world"
(format nil "~@(  2nd THING~)")
;=> "  2nd thing"
(format nil "~(~a~)" 'foo)
;=> "foo"
(format nil "~:(~a ~a~)" 'foo-bar "BAZ qux")
;=> "Foo-Bar Baz Qux"
(format nil "~@(~:(a b~) c~)")
;=> "A b c"
(format nil "~:@(x~(Y~)z~)")
;=> "XYZ"

;;; ~[ ~; ~]
(format nil "~[zero~;one~;two~]" 1)
;=> "one"
(format nil "~[zero~;one~;two~]" 2)
;=> "two"
(format nil "~[zero~;one~;two~]" 5)
;=> ""
(format nil "~[zero~;one~:;other~]" 5)
;=> "other"
(format nil "~[zero~;one~:;other~]" -1)
;=> "other"
(format nil "~[zero~;one~:;other~]" 0)
;=> "zero"
(format nil "~1[zero~;one~]")
;=> "one"
(format nil "~v[a~;b~;c~]" 2)
;=> "c"
(format nil "~#[none~;one~;two~:;many~]" 1 2)
;=> "two"
(format nil "~:[no~;yes~]" nil)
;=> "no"
(format nil "~:[no~;yes~]" 'x)
;=> "yes"
(format nil "~@[value: ~a~]" 5)
;=> "value: 5"
(format nil "~@[value: ~a~]" nil)
;=> ""
(format nil "~@[~a~] ~a" nil 2)
;=> " 2"
(format nil "~[~]" 0)
;=> ""
(format nil "~:[~a~;~a ~a~]" t 1 2)
;=> "1 2"
(format nil "~[a~;~[x~;y~]~]" 1 1)
;=> "y"

;;; ~{ ~}
(format nil "~{~a~^, ~}" '(1 2 3))
;=> "1, 2, 3"
(format nil "~{~a~}" nil)
;=> ""
(format nil "~{~a=~a~^ ~}" '(a 1 b 2))
;=> "A=1 B=2"
(format nil "~:{~a=~a~^, ~}" '((a 1) (b 2)))
;=> "A=1B=2"
(format nil "~:{~a=~a~:^; ~}" '((a 1) (b 2)))
;=> "A=1; B=2"
(format nil "~@{~a~^-~}" 1 2 3)
;=> "1-2-3"
(format nil "~:@{~a~a~^ ~}" '(1 2) '(3 4))
;=> "1234"
(format nil "~2{~a~}" '(1 2 3))
;=> "12"
(format nil "~0{~a~}" '(1 2 3))
;=> ""
(format nil "~{~a~:}" nil)
;!E-TYPE
(format nil "~:{~}" "<~a>" '((1) (2)))
;=> "<1><2>"
(format nil "~{~}" "~a+" '(1 2))
;=> "1+2+"
(format nil "~{~{~a~}~^|~}" '((1 2) (3)))
;=> "12|3"
(format nil "~{~a ~a~^; ~}" '(1 2 3 4))
;=> "1 2; 3 4"
(format nil "~@{~a~} ~a" 1 2)
;!E-TYPE
(format nil "~{~a~0^ unreached~}" '(1))
;=> "1"
(format nil "~{~a~1,1^-~}" '(1 2))
;=> "1"
(format nil "~{~a~1,2,3^-~}" '(1 2))
;=> "1"
(format nil "~{~a~3,2,1^-~}" '(1 2))
;=> "1-2-"
(format nil "~{[~a]~#,3^~}" '(1 2 3 4 5))
;=> "[1][2]"
(format nil "~:{~@?~}" '(("<~a>" 1) ("[~a ~a]" 2 3)))
;=> "<1>[2 3]"

;;; ~^ at top level and in other constructs
(format nil "a~^b")
;=> "a"
(format nil "~a~^ and ~a" 1)
;=> "1"
(format nil "~a~^ and ~a" 1 2)
;=> "1 and 2"
(format nil "~(x ~a~^ y~)" 'z)
;=> "x z"
(format nil "~[a~^b~]c" 0)
;=> "a"

;;; ~? and ~@?
(format nil "~? ~a" "<~a ~a>" '(1 2) 3)
;=> "<1 2> 3"
(format nil "~@? ~a" "<~a ~a>" 1 2 3)
;=> "<1 2> 3"
(format nil "~?" "~a~^~a" '(1))
;=> "1"

;;; ~< ~>
(format nil "~10<abc~>")
;=> "       abc"
(format nil "~10@<abc~>")
;=> "abc       "
(format nil "~10:<abc~>")
;=> "       abc"
(format nil "~10:@<abc~>")
;=> "   abc    "
(format nil "~10<a~;b~>")
;=> "a        b"
(format nil "~11<a~;b~;c~>")
;=> "a    b    c"
(format nil "~10:<a~;b~>")
;=> "    a    b"
(format nil "~10<~a~;~a~>" 'x 'y)
;=> "X        Y"
(format nil "~,,2<a~;b~>")
;=> "a  b"
(format nil "~10,,,'*<a~;b~>")
;=> "a********b"
(format nil "~5,3<abcdef~>")
;=> "  abcdef"
(format nil "~20<~a~^~;~a~>" 'one)
;=> ""
(substitute #\/ #\Newline (format nil "~%;; ~{~<~%;; ~1,30:; ~a~>~}" '(aaaaaaaaaa bbbbbbbbbb cccccccccc dddddddddd eeeeeeeeee)))
;=> "/;;  AAAAAAAAAA BBBBBBBBBB/;;  CCCCCCCCCC DDDDDDDDDD/;;  EEEEEEEEEE"

;;; more combinations
(format nil "~:@{~a~:^,~}" '(1) '(2))
;=> "1,2"
(format nil "~:{~a~}" '(1))
;!E-TYPE
(format nil "~{~a ~}~a" '(1 2) 3)
;=> "1 2 3"
(format nil "~@{~a~#[~; and ~:;, ~]~}" 1 2 3)
;=> "1, 2 and 3"
(format nil "~#[nothing~;~a~;~a and ~a~:;~@{~a~#[~;, and ~:;, ~]~}~]" 1 2 3)
;=> "1, 2, and 3"
(format nil "~#[nothing~;~a~;~a and ~a~:;~@{~a~#[~;, and ~:;, ~]~}~]")
;=> "nothing"
(format nil "~#[nothing~;~a~;~a and ~a~:;~@{~a~#[~;, and ~:;, ~]~}~]" 1 2)
;=> "1 and 2"
(format nil "~@(~r~) item~:p" 3)
;=> "Three items"
(format nil "~(~@{~a~^ ~}~)" 'a 'b)
;=> "a b"
(handler-case (error "x ~d and ~s" 5 "y") (error (c) (format nil "~a" c)))
;=> "x 5 and \"y\""
(format nil "~a" (list 1.5 'a "b" #\c))
;=> "(1.5 A b c)"
(format nil "~s" (list 1.5 'a "b" #\c))
;=> "(1.5 A \"b\" #\\c)"
(format nil "~{~s~^ ~}" '(:a "x" 2.0))
;=> ":A \"x\" 2.0"
(format nil "~5,'xd" 3)
;=> "xxxx3"
(format nil "~'xd" 3)
;!E-TYPE
(format nil "~v,vf" 8 2 3.14159)
;=> "    3.14"
(format nil "~8,2,,'#f" 123456.0)
;=> "########"
(format nil "~3,1,,'#f" 123.0)
;=> "###"
(format nil "~v@{~a~}" 2 1 2 3)
;=> "12"
(format nil "~@{~:}" "x")
;=> "x"
(format nil "~@{x~:}")
;=> "x"
(format nil "~20:@<~a~>" 'mid)
;=> "        MID         "
(format nil "~10:@<~>")
;=> "          "
(format nil "~10<~>")
;=> "          "
(format nil "~a~v%~a" 1 0 2)
;=> "12"
(format nil "~v~" 3)
;=> "~~~"
(format nil "~va|" 'x "ab")
;!E-TYPE
(format nil "~{~a~}" '(1 . 2))
;!E-TYPE
(format nil "~a ~a" 1 2 3)
;=> "1 2"
(format nil "~@{~a~}" 1 2 3)
;=> "123"
(format nil "~a~@[ ~a~]~@[ ~a~]" 1 nil 3)
;=> "1 3"
(format nil "~:[zero~;~:*~a~]" 0)
;=> "0"
(format nil "~s" 1d7)
;=> "1.0e7"
(format nil "~s" -1.5d-10)
;=> "-1.5e-10"
(format nil "~a" 100.0)
;=> "100.0"
(format nil "~f" 1.0e7)
;=> "10000000.0"
(format nil "~f" 123456789.0)
;=> "123456789.0"
(format nil "~e" 1d7)
;=> "1.0e+7"
(format nil "~,2e" 0.0)
;=> "0.00e+0"
(format nil "~,2f" -0.001)
;=> "-0.00"
(format nil "~,2f" 0.005)
;=> "0.01"
(format nil "~,2f" 0.015)
;=> "0.01"
(format nil "~,3f" 1.0005)
;=> "1.000"
(format nil "~,1f" 1d15)
;=> "1000000000000000.0"
(format nil "~,1e" 1d15)
;=> "1.0e+15"
(format nil "~g" 100.0)
;=> "100.    "
(format nil "~g" 1234567.0)
;=> "1234567.    "
(format nil "~g" 12345678.0)
;=> "12345678.    "
(format nil "~,,,,,,'ee" 1.5)
;=> "1.4999999999999997e+0"
(format nil "~10,2,,,,'xf|" 1.5)
;!E-TYPE

;;; errors in control strings and arguments
(format nil "~a")
;!E-TYPE
(format nil "~q" 1)
;!E-TYPE
(format nil "~")
;!E-TYPE
(format nil "~{~a")
;!E-TYPE
(format nil "~a~}" 1)
;!E-TYPE
(format nil "~[a~;b")
;!E-TYPE
(format nil "~;")
;!E-TYPE
(format nil "~c" "a")
;!E-TYPE
(format nil "~:[a~]" t)
;!E-TYPE
(format nil "~:^")
;!E-TYPE
(format nil "~@^")
;!E-TYPE
(format nil "~:%")
;!E-TYPE
(format nil "~2,3,4,5,6a" 1)
;!E-TYPE
(format nil "~:p")
;!E-TYPE
(format nil "~:*")
;!E-TYPE
(format nil "~5@*" 1)
;!E-TYPE
(format nil "~[a~]" 'x)
;!E-TYPE
(format nil "~{~a~}" 5)
;!E-TYPE
(format nil "~@r" 4000)
;!E-TYPE
(format nil "~@r" 0)
;!E-TYPE
(format nil "~r" 1.5)
;!E-TYPE
(format nil "~?" 5 nil)
;!E-TYPE
(format nil "~:f" 1.5)
;!E-TYPE
(format nil 'sym)
;!E-TYPE

;;; destinations
(format t "hello ~a~%" 'world)
;=> nil
(format t "")
;=> nil
(let ((s (make-array 0 :element-type 'character :fill-pointer 0 :adjustable t))) (format s "ab~a" 1) (format s "~a" 2) s)
;=> "ab12"
(format 5 "x")
;!E-UNSUPPORTED
(format nil "~{x~2^y~}" '(1 2 3))
;!E-EVAL-LIMIT
