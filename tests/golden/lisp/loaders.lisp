;;;; defloader at check time (run-file.md, "Loaders and prepare"): the source
;;;; constructors, the options, opening a source, and field. Synthetic sources
;;;; need no files; the text source reads this very file, found next to it.

(defknob examples 96 :type integer :min 1)
;=> examples
(defloader train
  :source (synthetic :regression :features 8 :examples examples :seed 1)
  :batch 32 :shuffle t :drop-last t)
;=> train
(defloader valid :source (synthetic :blobs :classes 3 :features 4 :examples 100 :seed 2)
  :split (0.9 1.0) :batch 8)
;=> valid
(defloader corpus :source (text "loaders.lisp" :seq-len 16) :batch 4 :stages ((:short :batch 2) (:long)))
;=> corpus
(defloader tokens-in-memory :source (synthetic :random-tokens :vocab 50 :seq-len 12 :examples 40)
  :batch 5 :seed 7)
;=> tokens-in-memory

;; A source constructor checks its arguments and describes the source; the
;; files are found and opened by defloader.
(idx "images.gz" "labels.gz")
;=> (:source :idx :images "images.gz" :labels "labels.gz")
(getf (text '("a.txt" "b.txt") :seq-len 8) :paths)
;=> ("a.txt" "b.txt")
(getf (npy :x "x.npy" :y "y.npy") :fields)
;=> (:x "x.npy" :y "y.npy")
(idx "images.gz" 3)
;!E-TYPE
(text "a.txt")
;!E-TYPE
(tokens "t.bin" :seq-len 8)
;!E-TYPE
(tokens "t.bin" :dtype :word :seq-len 8)
;!E-TYPE
(synthetic :spirals :examples 10)
;!E-TYPE
(synthetic :blobs :classes "3")
;!E-TYPE

;; Files that are missing or malformed, at the defloader.
(defloader images :source (idx "no/such-images.gz" "no/such-labels.gz") :batch 8)
;!E-LOADER-SOURCE
(defloader sheet :source (csv "loaders.lisp" :columns ((:x :f32 (0 1)))) :batch 1)
;!E-LOADER-SOURCE
(defloader sheet2 :source (csv "loaders.lisp" :columns ((:x :f99 0))) :batch 1)
;!E-LOADER-SOURCE
(defloader tiny :source (synthetic :regression :features 0 :examples 10) :batch 2)
;!E-LOADER-SOURCE

;; Bad options.
(defloader train :source (synthetic :regression :features 2 :examples 10) :batch 2)
;!E-LOADER-SOURCE
(defloader b0 :source (synthetic :regression :features 2 :examples 10) :batch 0)
;!E-LOADER-SOURCE
(defloader b1 :source (synthetic :regression :features 2 :examples 10) :batch 2.5)
;!E-LOADER-SOURCE
(defloader no-batch :source (synthetic :regression :features 2 :examples 10))
;!E-LOADER-SOURCE
(defloader no-source :batch 4)
;!E-LOADER-SOURCE
(defloader backwards :source (synthetic :regression :features 2 :examples 10) :batch 2
  :split (0.9 0.1))
;!E-LOADER-SOURCE
(defloader past-one :source (synthetic :regression :features 2 :examples 10) :batch 2
  :split (0.5 1.5))
;!E-LOADER-SOURCE
(defloader short :source (synthetic :regression :features 2 :examples 10) :batch 20 :drop-last t)
;!E-LOADER-SOURCE
(defloader colour :source (synthetic :regression :features 2 :examples 10) :batch 2 :colour t)
;!E-LOADER-SOURCE
(defloader staged :source (synthetic :regression :features 2 :examples 10) :batch 2
  :stages ((:short :batch 0)))
;!E-LOADER-SOURCE

;; field: getf that names the batch's fields when one is missing.
(field (list :x 1 :y 2) :y)
;=> 2
(field (list :x 1 :y nil) :y)
;=> nil
(field (list :x 1 :y 2) :label)
;!E-LOADER-FIELD
(field nil :x)
;!E-LOADER-FIELD
(field (list :x 1) "x")
;!E-TYPE
