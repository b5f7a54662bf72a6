// Hash tables (stub: being written).
#include "lisp/builtins.h"

namespace sexpgpu::lisp {

size_t ValueHasher::operator()(const Value& v) const { return std::hash<int64_t>()(v.i) ^ size_t(v.kind); }
bool ValueKeyEq::operator()(const Value& a, const Value& b) const { return a == b; }
Value* HashTable::find(const Value& k) {
  auto it = index.find(k);
  return it == index.end() ? nullptr : &entries[it->second].second;
}
void HashTable::put(const Value& k, const Value& v) {
  if (Value* p = find(k)) { *p = v; return; }
  index[k] = entries.size();
  entries.emplace_back(k, v);
  dead.push_back(0);
  ++live;
}
bool HashTable::remove(const Value& k) { return false; (void)k; }
void HashTable::clear() {}

void register_hash_builtins(Interp&) {}

}  // namespace sexpgpu::lisp
