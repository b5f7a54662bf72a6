// Hash tables: hashing and key equality for the four tests (eq, eql, equal,
// equalp), the insertion-ordered HashTable of value.h, and the builtins
// (make-hash-table, gethash, %puthash for (setf gethash), remhash, clrhash,
// maphash, hash-table-count/-test/-size, sxhash).
//
// Invariant: keys equal under a table's test hash equal. Strings hash whole;
// hashing descends into at most kHashBudget conses and arrays, in a traversal
// that depends only on structure, so long lists and circular keys stay cheap
// and hash consistently; the equality test then decides.
#include <algorithm>
#include <cstring>

#include "lisp/builtins.h"
#include "lisp/chars.h"

namespace sexpgpu::lisp {

namespace {

constexpr int kHashBudget = 64;

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t combine(uint64_t h, uint64_t x) {
  return mix(h ^ (x + 0x632be59bd9b4e019ULL + (h << 6)));
}

// eq/eql: the kind and the bits (a character's unused bits are zero).
uint64_t identity_hash(const Value& v) {
  return mix(uint64_t(v.i) ^ (uint64_t(v.kind) << 56));
}

constexpr uint64_t kConsSeed = 0x1f3d5b79, kArraySeed = 0x2e4c6a88, kTableSeed = 0x3a5c7e91;

uint64_t string_hash(const String* s, bool fold) {
  uint64_t h = combine(kArraySeed, s->size());
  for (size_t i = 0; i < s->size(); ++i)
    h = combine(h, fold ? char_fold(s->chars[i]) : s->chars[i]);
  return h;
}

uint64_t equal_hash(const Value& v, int& budget) {
  if (v.is_string()) return string_hash(v.str(), false);
  if (v.is_cons()) {
    if (--budget < 0) return kConsSeed;
    uint64_t h = combine(kConsSeed, equal_hash(v.cons()->car, budget));
    return combine(h, equal_hash(v.cons()->cdr, budget));
  }
  return identity_hash(v);
}

// equalp: numbers by value (1 and 1.0 alike), characters ignoring case,
// strings and vectors alike element by element, tables by test and count.
uint64_t equalp_hash(const Value& v, int& budget) {
  switch (v.kind) {
    case Kind::Int:
    case Kind::Float: {
      double d = v.is_int() ? double(v.i) : v.f;
      if (d == 0) d = 0;  // -0.0 is equalp 0.0
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      return mix(bits);
    }
    case Kind::Char: return char_fold(v.ch);  // as a string's element hashes
    case Kind::String:
      if (--budget < 0) return kArraySeed;
      return string_hash(v.str(), true);
    case Kind::Vector: {
      // Element by element, as string_hash does, so "ab" and #(#\a #\b) agree.
      if (--budget < 0) return kArraySeed;
      const Vector* vec = v.vec();
      uint64_t h = combine(kArraySeed, vec->size());
      for (size_t i = 0; i < vec->size(); ++i) h = combine(h, equalp_hash(vec->items[i], budget));
      return h;
    }
    case Kind::Cons: {
      if (--budget < 0) return kConsSeed;
      uint64_t h = combine(kConsSeed, equalp_hash(v.cons()->car, budget));
      return combine(h, equalp_hash(v.cons()->cdr, budget));
    }
    case Kind::Hash: return combine(kTableSeed + uint64_t(v.hash()->test), v.hash()->live);
    default: return identity_hash(v);
  }
}

uint64_t hash_for(const Value& v, HashTest test) {
  int budget = kHashBudget;
  switch (test) {
    case HashTest::Eq:
    case HashTest::Eql: return identity_hash(v);
    case HashTest::Equal: return equal_hash(v, budget);
    case HashTest::Equalp: return equalp_hash(v, budget);
  }
  return identity_hash(v);
}

}  // namespace

size_t ValueHasher::operator()(const Value& v) const {
  return size_t(hash_for(v, test));
}

bool ValueKeyEq::operator()(const Value& a, const Value& b) const {
  switch (test) {
    case HashTest::Eq:
    case HashTest::Eql: return a == b;
    case HashTest::Equal: return equal(a, b);
    case HashTest::Equalp: return equalp(a, b);
  }
  return a == b;
}

// ---- the table ----------------------------------------------------------------
// Entries live in slots, iterated in slot order, as SBCL's kv vector is: a
// new key takes the most recently freed slot (a LIFO free list), else the
// next slot at the end. Without removals that is insertion order; with them
// it is SBCL's order (remove 2 of 1 2 3, add 4: maphash sees 1 4 3).
//
// Slot 0 is a header, always marked dead so every reader skips it (SBCL
// reserves index 0 of its kv vector too): its key is the head of the free
// list, an integer slot index or -1; a freed slot's key links to the next
// free slot. Slots are never compacted: the vector stays as long as the most
// entries the table has held, since freed slots are reused.

namespace {

constexpr int64_t kNoSlot = -1;

void ensure_header(HashTable& h) {
  if (!h.entries.empty()) return;
  h.entries.emplace_back(Value::integer(kNoSlot), Value::integer(0));
  h.dead.push_back(1);
}

}  // namespace

Value* HashTable::find(const Value& k) {
  auto it = index.find(k);
  return it == index.end() ? nullptr : &entries[it->second].second;
}

void HashTable::put(const Value& k, const Value& v) {
  if (Value* p = find(k)) {
    *p = v;
    return;
  }
  ensure_header(*this);
  int64_t slot = entries[0].first.i;
  if (slot != kNoSlot) {
    entries[0].first = entries[size_t(slot)].first;  // pop the free list
    entries[size_t(slot)] = {k, v};
    dead[size_t(slot)] = 0;
  } else {
    slot = int64_t(entries.size());
    entries.emplace_back(k, v);
    dead.push_back(0);
  }
  index.emplace(k, size_t(slot));
  ++live;
}

bool HashTable::remove(const Value& k) {
  auto it = index.find(k);
  if (it == index.end()) return false;
  size_t slot = it->second;
  index.erase(it);
  // Push the slot on the free list; drop its references.
  entries[slot] = {entries[0].first, Value::integer(0)};
  entries[0].first = Value::integer(int64_t(slot));
  dead[slot] = 1;
  --live;
  return true;
}

void HashTable::clear() {
  entries.clear();
  dead.clear();
  index.clear();
  live = 0;
}

// ---- builtins ---------------------------------------------------------------------

namespace {

const char* const kTestNames[] = {"EQ", "EQL", "EQUAL", "EQUALP"};

// :test as a symbol or one of the four builtin functions.
HashTest parse_test(Interp& in, Value test) {
  Value name = test;
  if (test.is_function() && test.fn()->builtin) name = test.fn()->name;
  if (name.is_symbol() && !name.sym()->keyword && name.sym()->qualifier.empty())
    for (int i = 0; i < 4; ++i)
      if (name.sym()->name == kTestNames[i]) return HashTest(i);
  in.type_error(test, "a hash table test (eq, eql, equal or equalp)", "make-hash-table");
}

HashTable* arg_table(Interp& in, Value v, const char* where) {
  if (!v.is_hash()) in.type_error(v, "a hash table", op_name(where));
  return v.hash();
}

// The heap limit sees a table's entries as they grow.
void note_growth(Interp& in, HashTable* h, size_t old_capacity) {
  if (h->entries.capacity() > old_capacity)
    in.note_alloc((h->entries.capacity() - old_capacity) * (sizeof(h->entries[0]) + 24));
}

void register_tables(Interp& in) {
  SG_BUILTIN(in, "MAKE-HASH-TABLE", 0, -1, "a hash table (:test eq eql equal equalp, :size)", {
    Value k[4];
    bool given[4];
    in.parse_keys(args, nargs, 0, {"TEST", "SIZE", "REHASH-SIZE", "REHASH-THRESHOLD"}, k, given);
    HashTest test = given[0] ? parse_test(in, k[0]) : HashTest::Eql;
    int64_t size = 7;  // SBCL's default
    if (given[1]) {
      if (!k[1].is_int() || k[1].i < 0)
        in.type_error(k[1], "a non-negative integer", "make-hash-table :size");
      size = k[1].i;
    }
    HashTable* h = in.alloc<HashTable>(test);
    // The capacity is what hash-table-size reports; a huge :size is only a hint.
    h->entries.reserve(size_t(std::min<int64_t>(size, 1 << 16)) + 1);  // + the header
    note_growth(in, h, 0);
    return Value::object(Kind::Hash, h);
  });
  SG_BUILTIN(in, "GETHASH", 2, 3,
             "the value under a key, and t if it was there (else default, nil)", {
               HashTable* h = arg_table(in, args[1], "GETHASH");
               if (Value* v = h->find(args[0])) return in.values2(*v, in.t());
               return in.values2(nargs > 2 ? args[2] : in.nil(), in.nil());
             });
  SG_BUILTIN(in, "%PUTHASH", 3, 4, "(setf gethash): key table [default] value; returns value", {
    HashTable* h = arg_table(in, args[1], "SETF GETHASH");
    size_t cap = h->entries.capacity();
    h->put(args[0], args[nargs - 1]);
    note_growth(in, h, cap);
    return args[nargs - 1];
  });
  SG_BUILTIN(in, "REMHASH", 2, 2, "remove a key; t if it was there",
             { return in.boolean(arg_table(in, args[1], "REMHASH")->remove(args[0])); });
  SG_BUILTIN(in, "CLRHASH", 1, 1, "remove every entry; returns the table", {
    arg_table(in, args[0], "CLRHASH")->clear();
    return args[0];
  });
  SG_BUILTIN(in, "MAPHASH", 2, 2, "call f on each key and value, in insertion order; nil", {
    Value f = args[0].is_function() ? args[0] : in.resolve_function(args[0]);
    HashTable* h = arg_table(in, args[1], "MAPHASH");
    // By index, re-reading the size: f may remove entries (even clrhash).
    for (size_t i = 0; i < h->entries.size(); ++i) {
      if (h->dead[i]) continue;
      Value kv[2] = {h->entries[i].first, h->entries[i].second};
      in.apply(f, kv, 2);
    }
    in.single();
    return in.nil();
  });
}

void register_queries(Interp& in) {
  SG_BUILTIN(in, "HASH-TABLE-P", 1, 1, "is it a hash table",
             { return in.boolean(args[0].is_hash()); });
  SG_BUILTIN(in, "HASH-TABLE-COUNT", 1, 1, "the number of entries",
             { return Value::integer(int64_t(arg_table(in, args[0], "HASH-TABLE-COUNT")->live)); });
  SG_BUILTIN(in, "HASH-TABLE-TEST", 1, 1, "the test's name: eq, eql, equal or equalp",
             { return in.sym(kTestNames[int(arg_table(in, args[0], "HASH-TABLE-TEST")->test)]); });
  SG_BUILTIN(in, "HASH-TABLE-SIZE", 1, 1, "how many entries fit before the table grows", {
    HashTable* h = arg_table(in, args[0], "HASH-TABLE-SIZE");
    size_t slots = h->entries.capacity() > 0 ? h->entries.capacity() - 1 : 0;  // less the header
    return Value::integer(int64_t(std::max<size_t>({slots, h->live, 1})));
  });
  SG_BUILTIN(in, "HASH-TABLE-REHASH-SIZE", 1, 1, "the growth factor (1.5)", {
    arg_table(in, args[0], "HASH-TABLE-REHASH-SIZE");
    return Value::flt(1.5);
  });
  SG_BUILTIN(in, "HASH-TABLE-REHASH-THRESHOLD", 1, 1, "the load factor (1.0)", {
    arg_table(in, args[0], "HASH-TABLE-REHASH-THRESHOLD");
    return Value::flt(1.0);
  });
  SG_BUILTIN(in, "SXHASH", 1, 1, "a non-negative hash code, equal for equal objects",
             { return Value::integer(int64_t(hash_for(args[0], HashTest::Equal) >> 2)); });
}

}  // namespace

void register_hash_builtins(Interp& in) {
  register_tables(in);
  register_queries(in);
}

}  // namespace sexpgpu::lisp
