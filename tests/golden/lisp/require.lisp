;;;; Modules and require (language.md "Modules and require").

(require "./modules/blocks.lisp" :as blocks)
(blocks:double 4)
;=> 8
blocks:*scale*
;=> 3
(blocks:twice (+ 1 2))
;=> (3 3)
(blocks:hidden 1)
;!E-UNBOUND
(hidden 1)
;!E-UNBOUND
(double 1)
;!E-UNBOUND
(require "./modules/blocks.lisp" :only (double))
(double 5)
;=> 10
(require "./modules/blocks.lisp" :only (hidden))
;!E-UNBOUND
(require "./modules/nope.lisp")
;!E-REQUIRE-NOT-FOUND
;; An explicit path with an extension names that file as written.
(require "./modules/shapes.lib")
(shapes:area 2 3)
;=> 6
(require "./modules/shapes.lib" :as s)
(s:area 4 5)
;=> 20
;; After a require that failed, the uses of what it would have given are
;; consequences, not new errors.
(require "./modules/missing.lisp" :as missing)
;!E-REQUIRE-NOT-FOUND
(missing:f 1)
(require "./modules/missing.lisp" :only (g))
;!E-REQUIRE-NOT-FOUND
(g 1)
(require "./modules/not-a-module.lisp")
;!E-REQUIRE-NOT-FOUND
(require "./modules/cycle-a.lisp")
;!E-REQUIRE-CYCLE
(require "sexpgpu/no-such-module")
;!E-REQUIRE-NOT-FOUND
(require nope)
;!E-TYPE
(require "./modules/blocks.lisp" :as)
;!E-ARITY
(nosuch:thing 1)
;!E-UNBOUND
(in-package :cl-user)
;!E-UNSUPPORTED
(defpackage :foo)
;!E-UNSUPPORTED
(defmodule foo (:export x))
;!E-TYPE
(defun identity (x) (list x))
;!W-SHADOW
(identity 1)
;=> (1)
