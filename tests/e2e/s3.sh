#!/usr/bin/env bash
# s3:// data sources end to end, against a real S3-compatible server on
# 127.0.0.1 that this test starts: moto (PyPI's moto[server]), behind a
# fault-injecting proxy (s3/fault_proxy.py) that logs every request.
#   - every source kind (idx, npy, csv, tokens, text, lists of them) from
#     s3://, fetched in ranged parts into $SEXPGPU_CACHE/s3, byte for byte;
#   - a run from s3:// ends with parameters byte-identical to the same run
#     from the local files; a second run downloads no object bytes (the
#     proxy's log: HEADs only), and with no network uses the cached copy;
#   - E-S3 for a missing key, a missing bucket, no network, a malformed
#     address, a tuning variable out of range;
#   - faults: 500s (retried; persistent: E-S3), a connection cut mid-object
#     (retried; persistent: E-S3), a stall beyond the timeout (retried), a
#     wrong ETag (E-S3), a damaged body (downloaded again), an object
#     replaced during the download (412: E-S3): never a partial or wrong
#     cache entry;
#   - doctor FILE: where the credentials come from (never their value) and
#     whether each object is reachable; ~/.aws/credentials under AWS_PROFILE;
#   - the secret grep: no key or token in any output or file.
# moto is found in a Python that has it: $SEXPGPU_TEST_PYTHON, else the
# venv scripts/install-deps.sh --tests makes (/opt/sexpgpu-test/venv), else
# python3 on PATH; none: exit 77 (SKIP).
# S3_TEST_KEEP=1 keeps its temporary directory (the logs, the cache) to look at.
# Usage: s3.sh PATH/TO/sexpgpu SOURCE_DIR
set -u
BIN=$1
SRC=$2
HERE=$(cd "$(dirname "$0")" && pwd)
FM=/usr/share/datasets/fashion-mnist

PY=
t0=$EPOCHREALTIME
since() { awk -v now="$EPOCHREALTIME" -v then="$1" 'BEGIN { printf "%.1f", now - then }'; }
for py in "${SEXPGPU_TEST_PYTHON:-}" /opt/sexpgpu-test/venv/bin/python3 python3; do
  if [ -n "$py" ] && "$py" -c 'import moto.server, boto3' 2>/dev/null; then
    PY=$("$py" -c 'import sys; print(sys.executable)')  # HOME changes below
    break
  fi
done
if [ -z "$PY" ]; then
  echo "SKIP: no Python with moto[server] and boto3 (scripts/install-deps.sh --tests installs it in /opt/sexpgpu-test/venv; or set SEXPGPU_TEST_PYTHON)"
  exit 77
fi
if [ ! -f "$FM/t10k-images-idx3-ubyte.gz" ]; then
  echo "SKIP: no Fashion-MNIST in $FM (Debian's dataset-fashion-mnist)"
  exit 77
fi

TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ -n "${S3_TEST_KEEP:-}" ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
pass=0
fail=0
check() {  # check NAME STATUS [detail file]
  if [ "$2" -eq 0 ]; then
    pass=$((pass + 1))
  else
    echo "FAIL $1"
    [ $# -ge 3 ] && sed 's/^/    /' "$3" | head -30
    fail=$((fail + 1))
  fi
}

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
MOTO_PORT=$(free_port)
PROXY_PORT=$(free_port)
DEAD_PORT=$(free_port)  # nothing listens there: no network
LOG=$TMP/proxy.log
S3_UPLOAD_PART_MIN_SIZE=262144 "$PY" -m moto.server -H 127.0.0.1 -p "$MOTO_PORT" >"$TMP/moto.log" 2>&1 &
PIDS+=($!)
"$PY" "$HERE/s3/fault_proxy.py" "$PROXY_PORT" "$MOTO_PORT" "$LOG" >"$TMP/proxy.err" 2>&1 &
PIDS+=($!)
# A second moto that checks every request's SigV4 signature against its
# IAM users, after the fixture's first six requests (fixture.py --iam).
AUTH_PORT=$(free_port)
INITIAL_NO_AUTH_ACTION_COUNT=6 "$PY" -m moto.server -H 127.0.0.1 -p "$AUTH_PORT" >"$TMP/moto-auth.log" 2>&1 &
PIDS+=($!)
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }  # a TCP connect: no request
for _ in $(seq 300); do
  listening "$MOTO_PORT" && listening "$PROXY_PORT" && listening "$AUTH_PORT" && break
  sleep 0.1
done
fault() {  # fault MODE COUNT [METHODS-JSON] [SECONDS]
  "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), method="POST"))' \
    "http://127.0.0.1:$PROXY_PORT/__fault__" \
    "{\"mode\": \"$1\", \"count\": $2, \"methods\": ${3:-[\"GET\"]}, \"seconds\": ${4:-20}}"
}

# The objects: Fashion-MNIST's test set (single-part uploads: MD5 ETags),
# its images again in 1 MiB parts (a multipart "MD5-N" ETag), and small
# files of every other kind.
D=$TMP/data
mkdir -p "$D"
"$PY" - "$D" <<'PYEOF'
import struct, sys
d = sys.argv[1]
def npy(path, descr, shape, raw):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + raw)
npy(d + "/x.npy", "<f4", "(20, 3)", struct.pack("<60f", *[i * 0.5 for i in range(60)]))
npy(d + "/y.npy", "<i4", "(20,)", struct.pack("<20i", *[i % 3 for i in range(20)]))
with open(d + "/d.csv", "w") as f:
    f.write("a,b,c,label\n" + "".join("%d,%d.5,%d,%d\n" % (i, i, -i, i % 2) for i in range(30)))
with open(d + "/t1.bin", "wb") as f: f.write(struct.pack("<200H", *[i % 50 for i in range(200)]))
with open(d + "/t2.bin", "wb") as f: f.write(struct.pack("<100H", *[i % 7 for i in range(100)]))
with open(d + "/a.txt", "w") as f: f.write("the quick brown fox jumps over the lazy dog\n" * 4)
with open(d + "/b.txt", "w") as f: f.write("pack my box with five dozen liquor jugs\n" * 4)
PYEOF
"$PY" "$HERE/s3/fixture.py" "http://127.0.0.1:$MOTO_PORT" data \
  "fm/t10k-images-idx3-ubyte.gz=$FM/t10k-images-idx3-ubyte.gz" \
  "fm/t10k-labels-idx1-ubyte.gz=$FM/t10k-labels-idx1-ubyte.gz" \
  "kinds/x.npy=$D/x.npy" "kinds/y.npy=$D/y.npy" "kinds/d.csv=$D/d.csv" \
  "kinds/t1.bin=$D/t1.bin" "kinds/t2.bin=$D/t2.bin" "kinds/a b.txt=$D/a.txt" "kinds/b.txt=$D/b.txt" \
  --multipart "fm/mp/t10k-images-idx3-ubyte.gz=$FM/t10k-images-idx3-ubyte.gz" >"$TMP/fixture.out" 2>&1
check "fixture uploads" $? "$TMP/fixture.out"

F=$TMP/files
mkdir -p "$F"
mlp() {  # mlp IMAGES LABELS: a small Fashion-MNIST run file
  cat <<LISP
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (idx "$1" "$2") :batch 100 :shuffle t :drop-last t)
(defmodel mlp (x) (nn:linear x 10 :name "fc"))
(defun prepare (batch ctx)
  (list :x (/ (cast (flatten (getf batch :x) :start 1) :f32) 255.0) :y (getf batch :y)))
(defun objective (batch ctx) (cross-entropy (mlp (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:adamw :lr 1e-3))
(defrun :steps 20 :seed 3 :log-every 5)
LISP
}
mlp s3://data/fm/t10k-images-idx3-ubyte.gz s3://data/fm/t10k-labels-idx1-ubyte.gz >"$F/fm.lisp"
mlp "$FM/t10k-images-idx3-ubyte.gz" "$FM/t10k-labels-idx1-ubyte.gz" >"$F/fm_local.lisp"
cp "$F/fm.lisp" "$F/fm_copy.lisp"
mlp s3://data/fm/t10k-images-idx3-ubyte.gz s3://data/fm/no-such-labels.gz >"$F/nokey.lisp"
mlp s3://no-such-bucket/fm/x.gz s3://no-such-bucket/fm/y.gz >"$F/nobucket.lisp"
mlp s3://Bad_Bucket/x.gz s3://data/fm/t10k-labels-idx1-ubyte.gz >"$F/malformed.lisp"
mlp s3://data/fm/mp/t10k-images-idx3-ubyte.gz s3://data/fm/t10k-labels-idx1-ubyte.gz >"$F/multipart.lisp"
cat >"$F/kinds.lisp" <<'LISP'
(defloader n :source (npy :x "s3://data/kinds/x.npy" :y "s3://data/kinds/y.npy") :batch 4)
(defloader c :source (csv "s3://data/kinds/d.csv" :columns ((:x :f32 (0 1 2)) (:y :i32 3)) :header t) :batch 4)
(defloader k :source (tokens ("s3://data/kinds/t1.bin" "s3://data/kinds/t2.bin") :dtype :u16 :seq-len 8) :batch 4)
(defloader tx :source (text ("s3://data/kinds/a b.txt" "s3://data/kinds/b.txt") :seq-len 16) :batch 2)
LISP

export AWS_ENDPOINT_URL=http://127.0.0.1:$PROXY_PORT
export AWS_ACCESS_KEY_ID=AKIDsexpgpuTEST0001
export AWS_SECRET_ACCESS_KEY=SECRETsexpgpuTESTwJalrXUtnFEMIK7MDENG
export AWS_SESSION_TOKEN=TOKENsexpgpuTESTFwoGZXIvYXdzEJr
export AWS_REGION=us-east-1
export SEXPGPU_S3_PART_MB=1 SEXPGPU_S3_PARALLEL=4 SEXPGPU_S3_RETRIES=3
export HOME=$TMP/home
mkdir -p "$HOME"
C=$TMP/cache
export SEXPGPU_CACHE=$C
OUT=$TMP/out
mkdir -p "$OUT"
entry() { echo "$SEXPGPU_CACHE/s3/data/fm/@$1/$2"; }
IMG_ETAG=$(awk '$1=="fm/t10k-images-idx3-ubyte.gz"{gsub(/"/,"",$2); print $2}' "$TMP/fixture.out")
IMG=$(entry "$IMG_ETAG" t10k-images-idx3-ubyte.gz)
no_partial() { ! find "$SEXPGPU_CACHE" -name '.partial-*' 2>/dev/null | grep -q .; }
echo "  setup (moto, uploads): $(since "$t0") s"
started=$EPOCHREALTIME
export SEXPGPU_LOG=${SEXPGPU_LOG:-info}  # the S3 client's retries in each output
lap() { echo "  $(since "$started") s: $1"; }

# --- the first check downloads in ranged parts; the entry is the object ---
: >"$LOG"
"$BIN" check "$F/fm.lisp" >"$OUT/check1.out" 2>"$OUT/check1.err"
check "check an s3:// run file" $? "$OUT/check1.err"
cmp -s "$IMG" "$FM/t10k-images-idx3-ubyte.gz"
check "the cached images are the object, byte for byte" $? "$OUT/check1.err"
[ "$(grep -c '"GET", "path": "/data/fm/t10k-images-idx3-ubyte.gz", "range": "bytes=' "$LOG")" -eq 5 ]
check "4.2 MiB in five ranged parts of 1 MiB" $? "$LOG"
no_partial
check "no partial file left" $?
# (loaders alone, not a run file: only the contract's forms are missing)
"$BIN" check "$F/kinds.lisp" >"$OUT/kinds.out" 2>&1
! grep -E 'E-' "$OUT/kinds.out" | grep -qv E-CONTRACT-MISSING
check "npy, csv, tokens and text lists from s3://" $? "$OUT/kinds.out"
for k in x.npy y.npy d.csv t1.bin t2.bin b.txt; do
  got=$(find "$C/s3/data/kinds" -path "*/$k" -type f | head -1)
  cmp -s "$got" "$D/$k"
  check "kinds/$k cached byte for byte" $? "$OUT/kinds.out"
done
cmp -s "$(find "$C/s3/data/kinds" -name 'a%20b.txt' -type f | head -1)" "$D/a.txt"
check "a key with a space" $?
"$BIN" check "$F/multipart.lisp" >"$OUT/multi.out" 2>&1
check "a multipart object (an ETag that is no MD5)" $? "$OUT/multi.out"
cmp -s "$(find "$C/s3/data/fm/mp" -path '*/@*-[0-9]*/t10k-images-idx3-ubyte.gz' -type f | head -1)" "$FM/t10k-images-idx3-ubyte.gz"
check "the multipart object cached byte for byte" $? "$OUT/multi.out"

lap "a run from"
# --- a run from s3:// equals the run from the local files; the second downloads nothing ---
"$BIN" run "$F/fm.lisp" --out "$OUT/run-s3" >"$OUT/run-s3.out" 2>"$OUT/run-s3.err"
check "run from s3://" $? "$OUT/run-s3.err"
"$BIN" run "$F/fm_local.lisp" --out "$OUT/run-local" >"$OUT/run-local.out" 2>&1
check "run from the local files" $? "$OUT/run-local.out"
cmp -s "$OUT/run-s3/checkpoints/step-00000020/model.safetensors" \
  "$OUT/run-local/checkpoints/step-00000020/model.safetensors"
check "the parameters of the s3:// run are byte-identical to the local run's" $?
: >"$LOG"
"$BIN" run "$F/fm_copy.lisp" --out "$OUT/run-s3-again" >"$OUT/again.out" 2>&1
check "a second run" $? "$OUT/again.out"
[ "$(grep -c '"method": "HEAD"' "$LOG")" -eq 2 ] && ! grep -v '"method": "HEAD"' "$LOG" | grep -q . &&
  ! grep -q '"body_bytes": [1-9]' "$LOG"
check "the second run downloads no object bytes (two HEADs, nothing else)" $? "$LOG"

# Two processes (as two ranks on one machine) fetching into an empty cache at once.
race=$TMP/cache-race
SEXPGPU_CACHE=$race "$BIN" check "$F/fm.lisp" >"$OUT/race1.out" 2>&1 &
r1=$!
SEXPGPU_CACHE=$race "$BIN" check "$F/fm_copy.lisp" >"$OUT/race2.out" 2>&1 &
r2=$!
wait $r1 && wait $r2 && cmp -s "$race/s3/data/fm/@$IMG_ETAG/t10k-images-idx3-ubyte.gz" "$FM/t10k-images-idx3-ubyte.gz" &&
  ! find "$race" -name '.partial-*' | grep -q .
check "two processes downloading one object at once: both fine, one whole entry" $? "$OUT/race2.out"
"$BIN" run "$F/fm.lisp" --ranks 2 --out "$OUT/run-ranks" >"$OUT/ranks.out" 2>&1
check "run --ranks 2 from s3:// (each rank finds the cached copy)" $? "$OUT/ranks.out"

lap "no network"
# --- no network: the cached copy and a warning; without one, E-S3 ---
AWS_ENDPOINT_URL=http://127.0.0.1:$DEAD_PORT SEXPGPU_S3_RETRIES=1 "$BIN" check "$F/fm.lisp" >"$OUT/offline.out" 2>"$OUT/offline.err"
check "no network: check still passes" $? "$OUT/offline.err"
grep -q "no answer from http://127.0.0.1:$DEAD_PORT .*using the cached copy" "$OUT/offline.err"
check "no network: a warning names the cached copy" $? "$OUT/offline.err"
AWS_ENDPOINT_URL=http://127.0.0.1:$DEAD_PORT SEXPGPU_S3_RETRIES=1 SEXPGPU_CACHE=$TMP/empty-cache \
  "$BIN" check "$F/fm.lisp" >"$OUT/offline2.out" 2>&1
[ $? -eq 1 ] && grep -q 'E-S3 s3://data/fm/t10k-images-idx3-ubyte.gz: HEAD: no answer' "$OUT/offline2.out" &&
  grep -q 'fix: no answer from .*check the network' "$OUT/offline2.out"
check "no network and no cached copy: E-S3 and its fix" $? "$OUT/offline2.out"

lap "E-S3 for"
# --- E-S3 for what is not there, or not an address ---
"$BIN" check "$F/nokey.lisp" >"$OUT/nokey.out" 2>&1
[ $? -eq 1 ] && grep -q 'E-S3 s3://data/fm/no-such-labels.gz: HEAD: HTTP 404 NoSuchKey' "$OUT/nokey.out" &&
  grep -q 'fix: no object fm/no-such-labels.gz in bucket data' "$OUT/nokey.out"
check "check finds a missing key: E-S3 NoSuchKey" $? "$OUT/nokey.out"
"$BIN" check "$F/nobucket.lisp" >"$OUT/nobucket.out" 2>&1
[ $? -eq 1 ] && grep -q 'E-S3 s3://no-such-bucket/fm/x.gz: HEAD: HTTP 404 NoSuchBucket' "$OUT/nobucket.out" &&
  grep -q 'fix: no bucket no-such-bucket at' "$OUT/nobucket.out"
check "check finds a missing bucket: E-S3 NoSuchBucket" $? "$OUT/nobucket.out"
"$BIN" check "$F/malformed.lisp" >"$OUT/malformed.out" 2>&1
[ $? -eq 1 ] && grep -q 'E-S3 "s3://Bad_Bucket/x.gz" is not an S3 address' "$OUT/malformed.out"
check "a malformed address: E-S3" $? "$OUT/malformed.out"
SEXPGPU_S3_TIMEOUT=0 "$BIN" check "$F/fm.lisp" >"$OUT/range.out" 2>&1
[ $? -eq 1 ] && grep -q 'E-S3 SEXPGPU_S3_TIMEOUT is "0"; it takes 1 to 3600 seconds' "$OUT/range.out"
check "a tuning variable out of range: E-S3" $? "$OUT/range.out"
"$BIN" check --json "$F/nokey.lisp" >"$OUT/nokey.json" 2>"$OUT/nokey-json.err"
jq -e '.[0].code == "E-S3" and (.[0].fix | test("no object"))' "$OUT/nokey.json" >/dev/null
check "check --json: E-S3 with its fix" $? "$OUT/nokey.json"

lap "faults"
# --- faults, each with an empty cache: a retry or a clear E-S3, never a bad entry ---
fault_case() {  # fault_case NAME EXPECT(ok|E-S3) MODE COUNT METHODS [SECONDS] [GREP]
  local name=$1 expect=$2
  export SEXPGPU_CACHE=$TMP/cache-$name
  fault "$3" "$4" "$5" "${6:-20}"
  : >"$LOG"
  SEXPGPU_S3_RETRIES=${S3_RETRIES:-3} SEXPGPU_S3_TIMEOUT=${S3_TIMEOUT:-30} "$BIN" check "$F/fm.lisp" >"$OUT/$name.out" 2>&1
  local rc=$?
  fault none 0
  lap "  fault $name"
  local img
  img=$(entry "$IMG_ETAG" t10k-images-idx3-ubyte.gz)
  if [ "$expect" = ok ]; then
    [ $rc -eq 0 ] && cmp -s "$img" "$FM/t10k-images-idx3-ubyte.gz"
    check "fault $name: retried, then the right bytes" $? "$OUT/$name.out"
  else
    [ $rc -eq 1 ] && grep -q "E-S3 s3://data/fm/t10k-images-idx3-ubyte.gz: ${7:-}" "$OUT/$name.out" && [ ! -e "$img" ]
    check "fault $name: E-S3 and no cache entry" $? "$OUT/$name.out"
  fi
  no_partial
  check "fault $name: no partial file left" $?
  export SEXPGPU_CACHE=$C
}
fault_case 500-twice ok 500 2 '["GET"]'
[ "$(grep -c '"fault": "500"' "$LOG")" -eq 2 ]
check "fault 500-twice: two 500s were served and retried" $? "$LOG"
fault_case 500-head ok 500 2 '["HEAD"]'
# (persistent faults with one retry: two attempts say it as well as four)
S3_RETRIES=1 fault_case 500-always E-S3 500 -1 '["GET"]' 20 'GET bytes [0-9-]*: HTTP 500 InternalError: We encountered an internal error. Please try again. (2 attempts)'
grep -q 'fix: the server kept failing' "$OUT/500-always.out"
check "fault 500-always: the fix says try again later" $? "$OUT/500-always.out"
fault_case cut-twice ok cut 2 '["GET"]'
S3_RETRIES=1 fault_case cut-always E-S3 cut -1 '["GET"]' 20 'GET bytes [0-9-]*: .*(2 attempts)'
S3_TIMEOUT=1 fault_case stall-once ok stall 1 '["GET"]' 5
grep -q 'no byte for 1 s (a stall); retrying' "$OUT/stall-once.out"
check "fault stall-once: the stall was found by the timeout" $? "$OUT/stall-once.out"
fault_case replaced E-S3 412 1 '["GET"]' 20 "the object changed while it was downloaded"
S3_RETRIES=1 fault_case wrong-etag E-S3 etag -1 '["HEAD", "GET"]' 20 "the downloaded bytes' MD5 is f78720b4224f21cce2f2ccf2d7a94c9a and the ETag is \"0123456789abcdef0123456789abcdef\""
fault_case corrupt-once ok corrupt 1 '["GET"]'
[ "$(grep -c '"fault": "corrupt"' "$LOG")" -eq 1 ] && [ "$(grep -c '"method": "GET"' "$LOG")" -ge 11 ]
check "fault corrupt-once: the damaged download was done again" $? "$LOG"

lap "doctor"
# --- doctor: where the credentials come from, and each object's reachability ---
"$BIN" doctor "$F/fm.lisp" --log trace >"$OUT/doctor.out" 2>"$OUT/doctor.err"
check "doctor FILE" $? "$OUT/doctor.err"
grep -q 'credentials: environment (AWS_ACCESS_KEY_ID, AWS_SESSION_TOKEN)' "$OUT/doctor.out" &&
  grep -q 's3://data/fm/t10k-images-idx3-ubyte.gz: reachable, 4422079 bytes' "$OUT/doctor.out"
check "doctor: the credentials' source and each object reachable" $? "$OUT/doctor.out"
"$BIN" doctor "$F/fm.lisp" --json >"$OUT/doctor.json" 2>/dev/null
jq -e '.s3.credentials.kind == "environment" and (.s3.objects | length == 2) and all(.s3.objects[]; .reachable)' \
  "$OUT/doctor.json" >/dev/null
check "doctor --json: s3.credentials and s3.objects" $? "$OUT/doctor.json"
"$BIN" doctor "$F/nokey.lisp" >"$OUT/doctor-nokey.out" 2>&1
[ $? -ne 0 ] && grep -q 's3://data/fm/no-such-labels.gz: not reachable: .*NoSuchKey' "$OUT/doctor-nokey.out"
check "doctor: a missing object is not reachable" $? "$OUT/doctor-nokey.out"
mkdir -p "$HOME/.aws"
printf '[default]\naws_access_key_id = AKIDsexpgpuTEST0002\naws_secret_access_key = SECRETsexpgpuTESTfile\n[lab]\naws_access_key_id = AKIDsexpgpuTEST0003\naws_secret_access_key = SECRETsexpgpuTESTlab\n' >"$HOME/.aws/credentials"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN AWS_PROFILE=lab \
  "$BIN" doctor "$F/fm.lisp" --log trace >"$OUT/doctor-file.out" 2>"$OUT/doctor-file.err"
grep -q 'credentials: file (~/.aws/credentials \[lab\])' "$OUT/doctor-file.out"
check "doctor: ~/.aws/credentials under AWS_PROFILE" $? "$OUT/doctor-file.out"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN AWS_PROFILE=nope \
  "$BIN" check "$F/fm.lisp" >"$OUT/noprofile.out" 2>&1
[ $? -eq 1 ] && grep -q 'E-S3 the profile "nope" (AWS_PROFILE) is not in ~/.aws/credentials' "$OUT/noprofile.out"
check "a profile that is not in the file: E-S3" $? "$OUT/noprofile.out"

lap "secrets"
# --- SigV4 as a server checks it: libcurl's signature accepted, a wrong one refused ---
"$PY" "$HERE/s3/fixture.py" --iam "http://127.0.0.1:$AUTH_PORT" signed "kinds/a b.txt=$D/a.txt" >"$TMP/iam.out" 2>&1
check "the IAM fixture" $? "$TMP/iam.out"
read -r IAM_ID IAM_SECRET < <(tail -1 "$TMP/iam.out")
# (a key with a space: the signature covers the percent-encoded path; moto 5's
# own check gets '+', '(', '*', '@' and '=' wrong, boto3's requests too)
echo '(defloader t :source (text "s3://signed/kinds/a b.txt" :seq-len 8) :batch 2)' >"$F/signed.lisp"
signed() {  # signed OUT ID SECRET [env...]: check signed.lisp against the checking moto
  local out=$1 id=$2 secret=$3
  shift 3
  env -u AWS_SESSION_TOKEN AWS_ENDPOINT_URL="http://127.0.0.1:$AUTH_PORT" AWS_ACCESS_KEY_ID="$id" \
    AWS_SECRET_ACCESS_KEY="$secret" SEXPGPU_CACHE="$TMP/cache-signed-$out" "$@" "$BIN" check "$F/signed.lisp" >"$OUT/$out.out" 2>&1
}
signed signed-ok "$IAM_ID" "$IAM_SECRET"
! grep -E 'E-' "$OUT/signed-ok.out" | grep -qv E-CONTRACT-MISSING &&
  cmp -s "$(find "$TMP/cache-signed-signed-ok" -name 'a%20b.txt' -type f)" "$D/a.txt"
check "a server that checks SigV4 takes libcurl's signature" $? "$OUT/signed-ok.out"
signed signed-wrong "$IAM_ID" "${IAM_SECRET}x"
grep -q 'E-S3 s3://signed/kinds/a b.txt: HEAD: HTTP 403 SignatureDoesNotMatch' "$OUT/signed-wrong.out" &&
  grep -q 'fix: check the credentials (environment: AWS_ACCESS_KEY_ID' "$OUT/signed-wrong.out"
check "a wrong secret: E-S3 SignatureDoesNotMatch, the fix names the credentials' source" $? "$OUT/signed-wrong.out"
signed signed-unknown AKIAUNKNOWN0000000 "$IAM_SECRET"
grep -q 'E-S3 s3://signed/kinds/a b.txt: HEAD: HTTP 403 InvalidAccessKeyId' "$OUT/signed-unknown.out"
check "an unknown key: E-S3 InvalidAccessKeyId" $? "$OUT/signed-unknown.out"
printf '[signer]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$IAM_ID" "$IAM_SECRET" >>"$HOME/.aws/credentials"
signed signed-file "" "" -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_PROFILE=signer
! grep -E 'E-' "$OUT/signed-file.out" | grep -qv E-CONTRACT-MISSING
check "signed with the keys of ~/.aws/credentials [signer]" $? "$OUT/signed-file.out"

# --- a bundle of an s3:// examples/mlp.lisp, moved, preempted and started again ---
# Its Fashion-MNIST files are objects; the bundle records them (size,
# ETag) and copies none; on "another machine" (another cache) the first
# start downloads them, the second downloads no object bytes; the end is
# the bytes of a run never stopped.
lap "a bundle"
t_bundle=$EPOCHREALTIME
"$PY" "$HERE/s3/fixture.py" "http://127.0.0.1:$MOTO_PORT" mnist \
  "fashion-mnist/train-images-idx3-ubyte.gz=$FM/train-images-idx3-ubyte.gz" \
  "fashion-mnist/train-labels-idx1-ubyte.gz=$FM/train-labels-idx1-ubyte.gz" \
  "fashion-mnist/t10k-images-idx3-ubyte.gz=$FM/t10k-images-idx3-ubyte.gz" \
  "fashion-mnist/t10k-labels-idx1-ubyte.gz=$FM/t10k-labels-idx1-ubyte.gz" >"$OUT/fixture-mnist.out" 2>&1
check "the Fashion-MNIST objects" $? "$OUT/fixture-mnist.out"
sed 's|"fashion-mnist/|"s3://mnist/fashion-mnist/|' "$SRC/examples/mlp.lisp" >"$F/mlp.lisp"
grep -q '"s3://mnist/fashion-mnist/train-images' "$F/mlp.lisp"
check "an s3:// examples/mlp.lisp" $?
MLP_STEPS=1400
MLP=(--steps $MLP_STEPS --threads 1 --quiet)
"$BIN" run "$F/mlp.lisp" --variant quick --set width=32 "${MLP[@]}" --out "$OUT/mlp-reference" >"$OUT/mlp-ref.out" 2>&1
check "the s3:// mlp, never stopped" $? "$OUT/mlp-ref.out"
"$BIN" bundle "$F/mlp.lisp" --variant quick --set width=32 -o "$OUT/mlp-bundle" >"$OUT/bundle.out" 2>&1
check "bundle of the s3:// mlp" $? "$OUT/bundle.out"
grep -q 'etag = ' "$OUT/mlp-bundle/bundle.toml" && ! find "$OUT/mlp-bundle" -name '*ubyte.gz' | grep -q . &&
  [ "$(grep -cE "source = [\"']s3://mnist/fashion-mnist/" "$OUT/mlp-bundle/bundle.toml")" -eq 4 ]
check "the bundle references the four objects (ETags) and copies none" $? "$OUT/mlp-bundle/bundle.toml"
mkdir -p "$OUT/elsewhere" && mv "$OUT/mlp-bundle" "$OUT/elsewhere/job"
JOB=$OUT/elsewhere/job
PATH=$(cd "$(dirname "$BIN")" && pwd):$PATH  # run.sh runs the sexpgpu on PATH
JOB_RUN=$JOB/runs/mlp.quick.width=32.steps=$MLP_STEPS
export SEXPGPU_CACHE=$TMP/cache-another-machine
: >"$LOG"
(cd / && exec "$JOB/run.sh" "${MLP[@]}" >"$OUT/job1.out" 2>"$OUT/job1.err") &
job=$!
for _ in $(seq 6000); do [ -e "$JOB_RUN/checkpoints/step-00001000/checksums.json" ] && break; sleep 0.01; done
kill -TERM $job
wait $job
check "run.sh preempted with SIGTERM exits 75" $(($? != 75)) "$OUT/job1.err"
grep -q '"method": "GET", "path": "/mnist/fashion-mnist/train-images-idx3-ubyte.gz"' "$LOG"
check "the first start downloads the objects into its cache" $? "$LOG"
: >"$LOG"
(cd "$TMP" && "$JOB/run.sh" "${MLP[@]}" >"$OUT/job2.out" 2>"$OUT/job2.err")
check "run.sh started again resumes and finishes" $? "$OUT/job2.err"
! grep -v '"method": "HEAD"' "$LOG" | grep -q . && ! grep -q '"body_bytes": [1-9]' "$LOG" &&
  grep -q '"method": "HEAD"' "$LOG"
check "the second start downloads no object bytes (HEADs only)" $? "$LOG"
grep -q '"resumed_from"' "$JOB_RUN/events.jsonl" &&
  cmp -s "$JOB_RUN/checkpoints/latest/model.safetensors" "$OUT/mlp-reference/checkpoints/latest/model.safetensors" &&
  cmp -s "$JOB_RUN/checkpoints/latest/optimizer.safetensors" "$OUT/mlp-reference/checkpoints/latest/optimizer.safetensors"
check "the preempted bundle ends with the parameters and state of the run never stopped, byte for byte" $?
# An object replaced since the bundle was made (the same labels compressed
# again: other bytes, another ETag) is refused, naming it.
gzip -dc "$FM/t10k-labels-idx1-ubyte.gz" | gzip -1 -n >"$D/labels-again.gz"
"$PY" "$HERE/s3/fixture.py" "http://127.0.0.1:$MOTO_PORT" mnist --exists \
  "fashion-mnist/t10k-labels-idx1-ubyte.gz=$D/labels-again.gz" >"$OUT/replace.out" 2>&1
"$JOB/run.sh" "${MLP[@]}" >"$OUT/job3.out" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q 'E-BUNDLE loader test.s "s3://mnist/fashion-mnist/t10k-labels-idx1-ubyte.gz" has changed since the bundle was made' "$OUT/job3.out"
check "an object changed since the bundle: E-BUNDLE naming it (exit $rc)" $? "$OUT/job3.out"
export SEXPGPU_CACHE=$C
echo "  the bundle's part: $(since "$t_bundle") s"

# --- secrets never leave: every output and every file a run, doctor and check wrote ---
"$BIN" run "$F/fm.lisp" --out "$OUT/run-trace" --log trace >"$OUT/run-trace.out" 2>"$OUT/run-trace.err"
check "run --log trace" $? "$OUT/run-trace.err"
grep -q 's3: HEAD' "$OUT/run-trace.err"
check "the trace log has the S3 requests" $? "$OUT/run-trace.err"
"$BIN" check --json "$F/fm.lisp" "$F/kinds.lisp" >"$OUT/check.json" 2>"$OUT/check-json.err"
leaks=$(grep -rlE 'SECRETsexpgpuTEST|TOKENsexpgpuTEST|AKIDsexpgpuTEST' "$OUT" "$C" "$TMP"/cache-* 2>/dev/null;
  grep -rlF -e "$IAM_SECRET" -e "${IAM_SECRET}x" "$OUT" 2>/dev/null)
[ -z "$leaks" ]
check "no key, secret or token in any output, log, run directory or cache (${leaks:-none})" $?

echo "s3: $pass passed, $fail failed ($(since "$t0") s, $(since "$started") s after the setup)"
[ "$fail" -eq 0 ]
