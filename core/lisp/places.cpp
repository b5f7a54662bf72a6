// setf places: get-setf-expansion for every place language.md lists, and
// the %set-* writers its expansions call. The macros setf, incf, push, pop...
// are written in the prelude on top of get-setf-expansion, as CL defines them.
#include "lisp/bit_vector.h"
#include "lisp/builtins.h"

namespace sexpgpu::lisp {

namespace {

struct Expansion {
  std::vector<Value> temps, vals, stores;
  Value writer, reader;
};

Value gensym(Interp& in, const char* prefix) {
  return Interp::symval(in.make_symbol(prefix + std::to_string(in.next_gensym_number())));
}

// Accessors whose writer is a %set-* builtin taking (args... new-value).
const struct {
  const char* accessor;
  const char* writer;
} kSimplePlaces[] = {
    {"CAR", "%SET-CAR"},
    {"FIRST", "%SET-CAR"},
    {"CDR", "%SET-CDR"},
    {"REST", "%SET-CDR"},
    {"NTH", "%SET-NTH"},
    {"ELT", "%SET-ELT"},
    {"AREF", "%SET-AREF"},
    {"SVREF", "%SET-AREF"},
    {"CHAR", "%SET-AREF"},
    {"SCHAR", "%SET-AREF"},
    {"GETHASH", "%PUTHASH"},
    {"SYMBOL-VALUE", "%SET-SYMBOL-VALUE"},
    {"SYMBOL-FUNCTION", "%SET-SYMBOL-FUNCTION"},
    {"FDEFINITION", "%SET-SYMBOL-FUNCTION"},
    {"SYMBOL-PLIST", "%SET-SYMBOL-PLIST"},
    {"GET", "%PUT"},
    {"FILL-POINTER", "%SET-FILL-POINTER"},
    {"MACRO-FUNCTION", "%SET-MACRO-FUNCTION"},
    {"SUBSEQ", "%SET-SUBSEQ"},
};

const char* kNthNames[] = {"SECOND", "THIRD", "FOURTH", "FIFTH", "SIXTH",
                           "SEVENTH", "EIGHTH", "NINTH", "TENTH"};

Expansion expand(Interp& in, Value place, Env* env, int depth);

// One temporary per argument form of the place, in order; returns the temps.
std::vector<Value> temps_for_arguments(Interp& in, Value place, Expansion& e) {
  std::vector<Value> args;
  for (Value a = cdr_of(place); a.is_cons(); a = a.cons()->cdr) {
    Value t = gensym(in, "G");
    e.temps.push_back(t);
    e.vals.push_back(a.cons()->car);
    args.push_back(t);
  }
  return args;
}

Expansion simple(Interp& in, Value place, const char* writer) {
  Expansion e;
  std::vector<Value> args = temps_for_arguments(in, place, e);
  Value store = gensym(in, "NEW");
  e.stores.push_back(store);
  std::vector<Value> w = {in.sym(writer)};
  w.insert(w.end(), args.begin(), args.end());
  w.push_back(store);
  e.writer = in.list_from(w);
  e.reader = in.cons(car_of(place), in.list_from(args));
  return e;
}

Expansion expand(Interp& in, Value place, Env* env, int depth) {
  if (depth > 100) in.fail("E-MACRO", "setf: place expansion does not terminate");
  Expansion e;
  if (place.is_symbol()) {
    // A symbol macro is the place it expands to (psetf and multiple-value-setq
    // then evaluate its subforms in order).
    bool symbol_macro = false;
    Value x = in.macroexpand_1(place, env, &symbol_macro);
    if (symbol_macro) return expand(in, x, env, depth + 1);
    if (place.is_nil() || place.sym() == in.T || place.sym()->keyword)
      in.fail("E-TYPE", "setf: cannot assign to the constant " + in.show(place));
    Value store = gensym(in, "NEW");
    e.stores.push_back(store);
    e.writer = in.list({in.sym("SETQ"), place, store});
    e.reader = place;
    return e;
  }
  if (!place.is_cons() || !car_of(place).is_symbol())
    in.fail("E-TYPE", "setf: " + in.show(place) + " is not a place");
  Symbol* head = car_of(place).sym();
  const std::string& n = head->name;
  if (head->qualifier.empty()) {
    for (const auto& p : kSimplePlaces)
      if (n == p.accessor) return simple(in, place, p.writer);
    for (int i = 0; i < 9; ++i)
      if (n == kNthNames[i])
        return expand(in, in.list({in.sym("NTH"), Value::integer(i + 1), car_of(cdr_of(place))}),
                      env, depth + 1);
    // c[ad]+r: peel the outermost letter.
    if (n.size() >= 4 && n.front() == 'C' && n.back() == 'R' &&
        n.find_first_not_of("AD", 1) == n.size() - 1) {
      std::string inner = "C" + n.substr(2);
      Value inner_form = in.cons(in.sym(inner), cdr_of(place));
      const char* outer = n[1] == 'A' ? "CAR" : "CDR";
      return expand(in, in.list({in.sym(outer), inner_form}), env, depth + 1);
    }
    if (n == "THE") return expand(in, car_of(cdr_of(cdr_of(place))), env, depth + 1);
    if (n == "GETF") {
      // The plist is itself a place: update it with %putf's result.
      Expansion inner = expand(in, car_of(cdr_of(place)), env, depth + 1);
      e.temps = inner.temps;
      e.vals = inner.vals;
      Value ind = gensym(in, "IND");
      e.temps.push_back(ind);
      e.vals.push_back(car_of(cdr_of(cdr_of(place))));
      Value def = cdr_of(cdr_of(cdr_of(place)));
      Value def_temp = gensym(in, "DEFAULT");
      e.temps.push_back(def_temp);  // evaluated once, after the indicator, as CL says
      e.vals.push_back(def.is_cons() ? car_of(def) : in.nil());
      Value store = gensym(in, "NEW");
      e.stores.push_back(store);
      Value plist_store = inner.stores.empty() ? gensym(in, "P") : inner.stores[0];
      e.writer = in.list({in.sym("LET"),
                          in.list({in.list({plist_store,
                                            in.list({in.sym("%PUTF"), inner.reader, ind, store})})}),
                          inner.writer, store});
      e.reader = in.list({in.sym("GETF"), inner.reader, ind, def_temp});
      return e;
    }
    if (n == "VALUES") {
      std::vector<Value> writers = {in.sym("VALUES")};
      for (Value a = cdr_of(place); a.is_cons(); a = a.cons()->cdr) {
        Expansion sub = expand(in, a.cons()->car, env, depth + 1);
        e.temps.insert(e.temps.end(), sub.temps.begin(), sub.temps.end());
        e.vals.insert(e.vals.end(), sub.vals.begin(), sub.vals.end());
        e.stores.push_back(sub.stores.empty() ? gensym(in, "NEW") : sub.stores[0]);
        // A subplace of several stores ((values b c) inside values) gets the
        // one value in its first; the others are nil, as in SBCL.
        Value w = sub.writer;
        if (sub.stores.size() > 1) {
          std::vector<Value> rest;
          for (size_t k = 1; k < sub.stores.size(); ++k)
            rest.push_back(in.list({sub.stores[k], in.nil()}));
          w = in.list({in.sym("LET"), in.list_from(rest), w});
        }
        writers.push_back(w);
      }
      e.writer = in.list_from(writers);
      e.reader = place;
      return e;
    }
  }
  if (head->qualifier.empty() && n == "APPLY") {
    // (apply #'name arg... list): name's writer applied to the same
    // arguments and the new value (CL 5.1.2.5).
    Value fform = car_of(cdr_of(place));
    if (!fform.is_cons() || !car_of(fform).is_symbol() || car_of(fform).sym() != in.S.function ||
        !car_of(cdr_of(fform)).is_symbol() || !cdr_of(cdr_of(place)).is_cons())
      in.fail("E-TYPE",
              "setf: " + in.show(place) + " is not a place: apply needs #'name and arguments");
    Value fname = car_of(cdr_of(fform));
    std::vector<Value> args;
    for (Value a = cdr_of(cdr_of(place)); a.is_cons(); a = a.cons()->cdr) {
      Value t = gensym(in, "G");
      e.temps.push_back(t);
      e.vals.push_back(a.cons()->car);
      args.push_back(t);
    }
    Value store = gensym(in, "NEW");
    e.stores.push_back(store);
    const char* writer = nullptr;
    for (const auto& p : kSimplePlaces)
      if (fname.sym()->qualifier.empty() && fname.sym()->name == p.accessor) writer = p.writer;
    std::vector<Value> w = {in.sym("APPLY")};
    if (writer) {  // (writer args... new): the new value goes after the spread list
      w.push_back(in.list({in.sym("FUNCTION"), in.sym(writer)}));
      w.insert(w.end(), args.begin(), args.end() - 1);
      w.push_back(in.list({in.sym("APPEND"), args.back(), in.list({in.sym("LIST"), store})}));
    } else {
      w.push_back(in.list({in.sym("FUNCTION"), in.list({in.sym("SETF"), fname})}));
      w.push_back(store);
      w.insert(w.end(), args.begin(), args.end());
    }
    e.writer = in.list_from(w);
    std::vector<Value> r = {in.sym("APPLY"), fform};
    r.insert(r.end(), args.begin(), args.end());
    e.reader = in.list_from(r);
    return e;
  }
  // A (setf NAME) function, global or from flet, wins over macro expansion;
  // macros are looked up in the lexical environment (macrolet) too.
  bool local_setf = false;
  for (Env* e2 = env; e2 && !local_setf; e2 = e2->parent)
    for (auto& b : e2->b)
      if (b.sym == head && b.ns == NS::SetfFun) local_setf = true;
  bool is_macro = false;
  in.lookup_function(head, env, &is_macro);
  if (local_setf || !in.setf_function(head).is_nil() || !is_macro) {
    std::vector<Value> args = temps_for_arguments(in, place, e);
    Value store = gensym(in, "NEW");
    e.stores.push_back(store);
    std::vector<Value> w = {in.sym("FUNCALL"),
                            in.list({in.sym("FUNCTION"), in.list({in.sym("SETF"), car_of(place)})}),
                            store};
    w.insert(w.end(), args.begin(), args.end());
    e.writer = in.list_from(w);
    e.reader = in.cons(car_of(place), in.list_from(args));
    return e;
  }
  bool expanded = false;
  Value x = in.macroexpand_1(place, env, &expanded);
  return expand(in, x, env, depth + 1);
}

Value nthcdr_for_set(Interp& in, int64_t n, Value list, const char* op) {
  for (int64_t i = 0; i < n; ++i) {
    if (!list.is_cons()) in.type_error(list, "a list long enough", op);
    list = list.cons()->cdr;
  }
  if (!list.is_cons()) in.type_error(list, "a cons", op);
  return list;
}

Value set_sequence_element(Interp& in, Value seq, int64_t i, Value v, const char* op) {
  if (seq.is_vector()) {
    if (!is_bit(v) && is_bit_vector(seq)) in.type_error(v, "a bit (0 or 1)", op);
    if (i < 0 || size_t(i) >= seq.vec()->size())
      in.fail("E-TYPE", std::string(op) + ": index " + std::to_string(i) + " is out of bounds for length " +
                            std::to_string(seq.vec()->size()));
    seq.vec()->items[size_t(i)] = v;
    return v;
  }
  if (seq.is_string()) {
    if (i < 0 || size_t(i) >= seq.str()->size())
      in.fail("E-TYPE", std::string(op) + ": index " + std::to_string(i) + " is out of bounds for length " +
                            std::to_string(seq.str()->size()));
    seq.str()->chars[size_t(i)] = in.arg_char(v, op);
    return v;
  }
  if (seq.is_list()) {
    if (i < 0) in.fail("E-TYPE", std::string(op) + ": negative index");
    nthcdr_for_set(in, i, seq, op).cons()->car = v;
    return v;
  }
  in.type_error(seq, "a sequence", op);
}

}  // namespace

void register_place_builtins(Interp& in) {
  SG_BUILTIN(in, "GET-SETF-EXPANSION", 1, 2, "temps, values, stores, writer and reader of a place", {
    Expansion e = expand(in, args[0], nargs > 1 ? env_of(args[1]) : nullptr, 0);
    return in.values({in.list_from(e.temps), in.list_from(e.vals), in.list_from(e.stores), e.writer,
                      e.reader});
  });
  SG_BUILTIN(in, "%SET-CAR", 2, 2, "(setf car)", {
    if (!args[0].is_cons()) in.type_error(args[0], "a cons", "setf car");
    return args[0].cons()->car = args[1];
  });
  SG_BUILTIN(in, "%SET-CDR", 2, 2, "(setf cdr)", {
    if (!args[0].is_cons()) in.type_error(args[0], "a cons", "setf cdr");
    return args[0].cons()->cdr = args[1];
  });
  SG_BUILTIN(in, "RPLACA", 2, 2, "replace the car; returns the cons", {
    if (!args[0].is_cons()) in.type_error(args[0], "a cons", "rplaca");
    args[0].cons()->car = args[1];
    return args[0];
  });
  SG_BUILTIN(in, "RPLACD", 2, 2, "replace the cdr; returns the cons", {
    if (!args[0].is_cons()) in.type_error(args[0], "a cons", "rplacd");
    args[0].cons()->cdr = args[1];
    return args[0];
  });
  SG_BUILTIN(in, "%SET-NTH", 3, 3, "(setf nth)", {
    int64_t n = in.arg_int(args[0], "setf nth");
    if (n < 0) in.type_error(args[0], "a non-negative index", "setf nth");
    return nthcdr_for_set(in, n, args[1], "setf nth").cons()->car = args[2];
  });
  SG_BUILTIN(in, "%SET-ELT", 3, 3, "(setf elt)", {
    return set_sequence_element(in, args[0], in.arg_int(args[1], "setf elt"), args[2], "setf elt");
  });
  SG_BUILTIN(in, "%SET-AREF", 3, 3, "(setf aref), (setf char), (setf svref)", {
    if (!args[0].is_vector() && !args[0].is_string()) in.type_error(args[0], "an array", "setf aref");
    int64_t i = in.arg_int(args[1], "setf aref");
    // aref ignores fill pointers; check against the whole storage.
    size_t cap = args[0].is_vector() ? args[0].vec()->items.size() : args[0].str()->chars.size();
    if (i < 0 || size_t(i) >= cap)
      in.fail("E-TYPE", "setf aref: index " + std::to_string(i) + " is out of bounds for length " +
                            std::to_string(cap));
    if (args[0].is_vector()) {
      if (!is_bit(args[2]) && is_bit_vector(args[0]))
        in.type_error(args[2], "a bit (0 or 1)", "setf aref");
      return args[0].vec()->items[size_t(i)] = args[2];
    }
    args[0].str()->chars[size_t(i)] = in.arg_char(args[2], "setf char");
    return args[2];
  });
  SG_BUILTIN(in, "%SET-SYMBOL-VALUE", 2, 2, "(setf symbol-value)", {
    in.set_symbol_value(in.arg_symbol(args[0], "setf symbol-value"), args[1]);
    return args[1];
  });
  SG_BUILTIN(in, "SET", 2, 2, "set a symbol's global (dynamic) value", {
    in.set_symbol_value(in.arg_symbol(args[0], "set"), args[1]);
    return args[1];
  });
  SG_BUILTIN(in, "%SET-SYMBOL-FUNCTION", 2, 2, "(setf symbol-function)", {
    if (args[0].is_cons()) {
      in.define_cell(in.arg_symbol(car_of(cdr_of(args[0])), "setf fdefinition"))->setf_function = args[1];
      return args[1];
    }
    if (!args[1].is_function()) in.type_error(args[1], "a function", "setf symbol-function");
    define_function(in, in.arg_symbol(args[0], "setf symbol-function"), args[1], false);
    return args[1];
  });
  SG_BUILTIN(in, "%SET-SYMBOL-PLIST", 2, 2, "(setf symbol-plist)", {
    in.arg_symbol(args[0], "setf symbol-plist")->plist = args[1];
    return args[1];
  });
  SG_BUILTIN(in, "%PUT", 3, 4, "(setf get)", {
    Symbol* s = in.arg_symbol(args[0], "setf get");
    Value v = args[nargs - 1];
    for (Value p = s->plist; p.is_cons() && cdr_of(p).is_cons(); p = cdr_of(cdr_of(p)))
      if (car_of(p) == args[1]) return cdr_of(p).cons()->car = v;
    s->plist = in.cons(args[1], in.cons(v, s->plist));
    return v;
  });
  SG_BUILTIN(in, "%PUTF", 3, 3, "a plist with the indicator set (destructive when present)", {
    for (Value p = args[0]; p.is_cons() && cdr_of(p).is_cons(); p = cdr_of(cdr_of(p)))
      if (car_of(p) == args[1]) {
        cdr_of(p).cons()->car = args[2];
        return args[0];
      }
    return in.cons(args[1], in.cons(args[2], args[0]));
  });
  SG_BUILTIN(in, "%SET-FILL-POINTER", 2, 2, "(setf fill-pointer)", {
    int64_t n = in.arg_int(args[1], "setf fill-pointer");
    if (args[0].is_vector() && args[0].vec()->fill_pointer >= 0 && n >= 0 &&
        size_t(n) <= args[0].vec()->items.size()) {
      args[0].vec()->fill_pointer = n;
      return args[1];
    }
    if (args[0].is_string() && args[0].str()->fill_pointer >= 0 && n >= 0 &&
        size_t(n) <= args[0].str()->chars.size()) {
      args[0].str()->fill_pointer = n;
      return args[1];
    }
    in.type_error(args[0], "a vector with a fill pointer large enough", "setf fill-pointer");
  });
}

}  // namespace sexpgpu::lisp
