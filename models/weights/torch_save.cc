#include "models/weights/torch_save.h"

#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include "core/error.h"
#include "models/weights/mapped_file.h"

namespace slapo::models {

namespace {

// A value of the pickle machine: only what a state dict is made of. Shared, since the memo and
// the stack refer to the same dict that SETITEMS fills.
struct PyValue;
using PyRef = std::shared_ptr<PyValue>;
struct PyValue {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kTensor };
  Kind kind = Kind::kNone;
  int64_t integer = 0;
  double real = 0;
  std::string text;                           // a string; a global's "module.name"; else a label
  std::vector<PyRef> items;                   // a tuple's or list's
  std::vector<std::pair<PyRef, PyRef>> dict;  // in insertion order
  at::Tensor tensor;                          // a tensor, or a storage as a 1-D tensor
  bool opaque = false;                        // an object of a class this reader does not build
};

PyRef make(PyValue::Kind kind) {
  auto v = std::make_shared<PyValue>();
  v->kind = kind;
  return v;
}
PyRef opaque(const std::string& what) {
  PyRef v = make(PyValue::Kind::kGlobal);
  v->text = what;
  v->opaque = true;
  return v;
}

// The storage classes torch.save names, by dtype.
at::ScalarType storage_dtype(const std::string& name, const std::string& where) {
  static const std::map<std::string, at::ScalarType> kTypes = {
      {"torch.FloatStorage", at::kFloat}, {"torch.DoubleStorage", at::kDouble},
      {"torch.HalfStorage", at::kHalf},   {"torch.BFloat16Storage", at::kBFloat16},
      {"torch.LongStorage", at::kLong},   {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort}, {"torch.CharStorage", at::kChar},
      {"torch.ByteStorage", at::kByte},   {"torch.BoolStorage", at::kBool}};
  const auto it = kTypes.find(name);
  SLAPO_CHECK(it != kTypes.end(), ErrorCode::kInvalidArgument, where, ": storage type '", name,
              "' is not one slapo reads");
  return it->second;
}

class Unpickler {
 public:
  Unpickler(std::string path, const std::string& pickle,
            caffe2::serialize::PyTorchStreamReader& zip, std::shared_ptr<MappedFile> mapping)
      : path_(std::move(path)), in_(pickle), zip_(zip), mapping_(std::move(mapping)) {}

  PyRef run() {
    while (true) {
      const unsigned char op = byte();
      switch (op) {
        case 0x80: byte(); break;                          // PROTO
        case 0x95: bytes(8); break;                        // FRAME: a length we do not need
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case '.': return pop();                            // STOP
        case '0': pop(); break;                            // POP
        case '1': pop_mark(); break;                       // POP_MARK
        case '2': push(top()); break;                      // DUP
        case 'N': push(make(PyValue::Kind::kNone)); break;
        case 0x88:
        case 0x89: {  // NEWTRUE, NEWFALSE
          PyRef v = make(PyValue::Kind::kBool);
          v->integer = op == 0x88;
          push(v);
          break;
        }
        case 'J': push_int(static_cast<int32_t>(le(4))); break;  // BININT
        case 'K': push_int(static_cast<int64_t>(le(1))); break;  // BININT1
        case 'M': push_int(static_cast<int64_t>(le(2))); break;  // BININT2
        case 0x8a: {                                             // LONG1
          const size_t n = le(1);
          SLAPO_CHECK(n <= 8, ErrorCode::kInvalidArgument, where(), ": an integer of ", n,
                      " bytes");
          uint64_t v = le(n);
          if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~0ull << (8 * n);  // sign-extend
          push_int(static_cast<int64_t>(v));
          break;
        }
        case 'G': {  // BINFLOAT: big-endian double
          uint64_t bits = 0;
          for (unsigned char c : bytes(8)) bits = (bits << 8) | c;
          PyRef v = make(PyValue::Kind::kFloat);
          std::memcpy(&v->real, &bits, sizeof bits);
          push(v);
          break;
        }
        case 'X': push_string(bytes(le(4))); break;          // BINUNICODE
        case 0x8c: push_string(bytes(le(1))); break;         // SHORT_BINUNICODE
        case 'T': push_string(bytes(le(4))); break;          // BINSTRING
        case 'U': push_string(bytes(le(1))); break;          // SHORT_BINSTRING
        case 'B': push_string(bytes(le(4))); break;          // BINBYTES
        case 'C': push_string(bytes(le(1))); break;          // SHORT_BINBYTES
        case ')': push(make(PyValue::Kind::kTuple)); break;  // EMPTY_TUPLE
        case ']': push(make(PyValue::Kind::kList)); break;   // EMPTY_LIST
        case '}': push(make(PyValue::Kind::kDict)); break;   // EMPTY_DICT
        case 't':
        case 'l': {  // TUPLE, LIST
          PyRef v = make(op == 't' ? PyValue::Kind::kTuple : PyValue::Kind::kList);
          v->items = pop_mark();
          push(v);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          PyRef v = make(PyValue::Kind::kTuple);
          v->items.resize(op - 0x84);
          for (size_t i = v->items.size(); i-- > 0;) v->items[i] = pop();
          push(v);
          break;
        }
        case 'a': {  // APPEND
          PyRef item = pop();
          top()->items.push_back(item);
          break;
        }
        case 'e': {  // APPENDS
          std::vector<PyRef> items = pop_mark();
          for (PyRef& item : items) top()->items.push_back(item);
          break;
        }
        case 's': {  // SETITEM
          PyRef value = pop(), key = pop();
          set_item(top(), key, value);
          break;
        }
        case 'u': {  // SETITEMS
          std::vector<PyRef> items = pop_mark();
          SLAPO_CHECK(items.size() % 2 == 0, ErrorCode::kInvalidArgument, where(),
                      ": SETITEMS with an odd number of values");
          for (size_t i = 0; i < items.size(); i += 2) set_item(top(), items[i], items[i + 1]);
          break;
        }
        case 'q': memo_[le(1)] = top(); break;          // BINPUT
        case 'r': memo_[le(4)] = top(); break;          // LONG_BINPUT
        case 0x94: memo_[memo_.size()] = top(); break;  // MEMOIZE
        case 'h': push(memo(le(1))); break;             // BINGET
        case 'j': push(memo(le(4))); break;             // LONG_BINGET
        case 'c': {                                     // GLOBAL module\nname\n
          PyRef v = make(PyValue::Kind::kGlobal);
          const std::string module = line();
          v->text = module + "." + line();
          push(v);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          PyRef name = pop(), module = pop();
          PyRef v = make(PyValue::Kind::kGlobal);
          v->text = module->text + "." + name->text;
          push(v);
          break;
        }
        case 'Q': push(persistent(pop())); break;  // BINPERSID
        case 'R': {                                // REDUCE
          PyRef args = pop(), callable = pop();
          push(reduce(callable, args));
          break;
        }
        case 0x81: {  // NEWOBJ
          pop();
          push(opaque(pop()->text));
          break;
        }
        case 'b': pop(); break;  // BUILD: a state dict's _metadata; ignored
        default:
          SLAPO_FAIL(ErrorCode::kInvalidArgument, where(), ": pickle opcode 0x", std::hex,
                     static_cast<int>(op), " at byte ", std::dec, pos_ - 1,
                     " is not one a state dict is written with");
      }
    }
  }

 private:
  std::string where() const { return path_ + ": data.pkl"; }
  unsigned char byte() {
    SLAPO_CHECK(pos_ < in_.size(), ErrorCode::kInvalidArgument, where(), ": ends early");
    return static_cast<unsigned char>(in_[pos_++]);
  }
  std::string bytes(size_t n) {
    SLAPO_CHECK(n <= in_.size() - pos_, ErrorCode::kInvalidArgument, where(), ": ends early");
    std::string out = in_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  uint64_t le(size_t n) {
    uint64_t v = 0;
    const std::string b = bytes(n);
    for (size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[i]);
    return v;
  }
  std::string line() {
    const size_t end = in_.find('\n', pos_);
    SLAPO_CHECK(end != std::string::npos, ErrorCode::kInvalidArgument, where(), ": ends early");
    std::string out = in_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  void push(PyRef v) { stack_.push_back(std::move(v)); }
  void push_int(int64_t i) {
    PyRef v = make(PyValue::Kind::kInt);
    v->integer = i;
    push(v);
  }
  void push_string(std::string s) {
    PyRef v = make(PyValue::Kind::kString);
    v->text = std::move(s);
    push(v);
  }
  PyRef top() {
    SLAPO_CHECK(stack_.size() > (marks_.empty() ? 0 : marks_.back()), ErrorCode::kInvalidArgument,
                where(), ": the pickle's stack is empty");
    return stack_.back();
  }
  PyRef pop() {
    PyRef v = top();
    stack_.pop_back();
    return v;
  }
  std::vector<PyRef> pop_mark() {
    SLAPO_CHECK(!marks_.empty(), ErrorCode::kInvalidArgument, where(), ": no mark");
    std::vector<PyRef> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()),
                             stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  PyRef memo(uint64_t key) {
    const auto it = memo_.find(key);
    SLAPO_CHECK(it != memo_.end(), ErrorCode::kInvalidArgument, where(), ": memo ", key,
                " read before it was written");
    return it->second;
  }
  void set_item(const PyRef& dict, PyRef key, PyRef value) {
    SLAPO_CHECK(dict->kind == PyValue::Kind::kDict, ErrorCode::kInvalidArgument, where(),
                ": SETITEM on something that is not a dict");
    dict->dict.emplace_back(std::move(key), std::move(value));
  }

  // ('storage', storage type, key, location, numel): the record data/<key>, viewed in the mapping.
  PyRef persistent(const PyRef& id) {
    SLAPO_CHECK(id->kind == PyValue::Kind::kTuple && id->items.size() >= 5 &&
                    id->items[0]->text == "storage" && id->items[2]->kind == PyValue::Kind::kString,
                ErrorCode::kInvalidArgument, where(), ": a persistent id that is not a storage");
    const at::ScalarType dtype = storage_dtype(id->items[1]->text, where());
    const std::string record = "data/" + id->items[2]->text;
    const auto cached = storages_.find(record);
    if (cached != storages_.end()) return cached->second;
    SLAPO_CHECK(zip_.hasRecord(record), ErrorCode::kInvalidArgument, path_, ": the record ", record,
                " is missing");
    const int64_t numel = id->items[4]->integer;
    const uint64_t offset = zip_.getRecordOffset(record);
    const uint64_t bytes = static_cast<uint64_t>(numel) * at::elementSize(dtype);
    SLAPO_CHECK(numel >= 0 && offset <= mapping_->size && bytes <= mapping_->size - offset,
                ErrorCode::kInvalidArgument, path_, ": the record ", record,
                " lies outside the file");
    PyRef v = make(PyValue::Kind::kTensor);
    std::shared_ptr<MappedFile> keep = mapping_;
    v->tensor = at::from_blob(
        static_cast<char*>(mapping_->base) + offset, {numel}, [keep](void*) {},
        at::TensorOptions().dtype(dtype));
    storages_[record] = v;
    return v;
  }

  PyRef reduce(const PyRef& callable, const PyRef& args) {
    const std::string& name = callable->text;
    const auto arg = [&](size_t i) -> const PyValue& {
      SLAPO_CHECK(args->items.size() > i, ErrorCode::kInvalidArgument, where(), ": ", name,
                  " with ", args->items.size(), " arguments");
      return *args->items[i];
    };
    const auto ints = [&](const PyValue& tuple) {
      std::vector<int64_t> out;
      for (const PyRef& item : tuple.items) out.push_back(item->integer);
      return out;
    };
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      const PyValue& storage = arg(0);
      SLAPO_CHECK(storage.kind == PyValue::Kind::kTensor, ErrorCode::kInvalidArgument, where(),
                  ": a tensor without a storage");
      const std::vector<int64_t> size = ints(arg(2)), stride = ints(arg(3));
      const int64_t offset = arg(1).integer;
      int64_t last = offset;  // the last element the view reads must be in the storage
      for (size_t i = 0; i < size.size(); ++i)
        if (size[i] > 0) last += (size[i] - 1) * stride[i];
      SLAPO_CHECK(size.size() == stride.size() && offset >= 0 &&
                      (c10::multiply_integers(size) == 0 || last < storage.tensor.numel()),
                  ErrorCode::kInvalidArgument, where(), ": a tensor view outside its storage");
      PyRef v = make(PyValue::Kind::kTensor);
      v->tensor = storage.tensor.as_strided(size, stride, offset);
      return v;
    }
    if (name == "torch._utils._rebuild_parameter") {
      SLAPO_CHECK(arg(0).kind == PyValue::Kind::kTensor, ErrorCode::kInvalidArgument, where(),
                  ": a parameter without a tensor");
      return args->items[0];
    }
    if (name == "torch.jit._pickle.restore_type_tag") {  // LibTorch's pickle_save: (value, type)
      SLAPO_CHECK(!args->items.empty(), ErrorCode::kInvalidArgument, where(), ": ", name,
                  " without a value");
      return args->items[0];
    }
    if (name == "collections.OrderedDict" || name == "builtins.dict" ||
        name == "__builtin__.dict") {
      PyRef dict = make(PyValue::Kind::kDict);
      if (!args->items.empty())
        for (const PyRef& pair : args->items[0]->items)
          if (pair->items.size() == 2) dict->dict.emplace_back(pair->items[0], pair->items[1]);
      return dict;
    }
    return opaque(name);  // not built, never called
  }

  std::string path_;
  const std::string& in_;
  size_t pos_ = 0;
  caffe2::serialize::PyTorchStreamReader& zip_;
  std::shared_ptr<MappedFile> mapping_;
  std::vector<PyRef> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, PyRef> memo_;
  std::map<std::string, PyRef> storages_;
};

// The dict of tensors at the top of a checkpoint, or under its "state_dict" or "model" key.
const PyValue* state_dict_of(const PyValue& top) {
  const auto all_tensors = [](const PyValue& d) {
    if (d.kind != PyValue::Kind::kDict) return false;
    for (const auto& [key, value] : d.dict)
      if (key->kind != PyValue::Kind::kString || value->kind != PyValue::Kind::kTensor)
        return false;
    return true;
  };
  if (all_tensors(top)) return &top;
  if (top.kind == PyValue::Kind::kDict)
    for (const char* key : {"state_dict", "model"})
      for (const auto& [k, v] : top.dict)
        if (k->text == key && all_tensors(*v)) return v.get();
  return nullptr;
}

}  // namespace

NamedTensors read_torch_save(const std::string& path) {
  std::shared_ptr<MappedFile> mapping = MappedFile::open(path, "torch.save weights");
  SLAPO_CHECK(mapping->size >= 4 && std::memcmp(mapping->base, "PK\x03\x04", 4) == 0,
              ErrorCode::kInvalidArgument, path,
              ": not a zip file as torch.save writes (the legacy format of PyTorch < 1.6 is not "
              "read; save it again with a newer PyTorch)");
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip;
  std::string pickle;
  try {
    zip = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
    SLAPO_CHECK(zip->hasRecord("data.pkl"), ErrorCode::kInvalidArgument, path,
                ": a zip file without data.pkl: not written by torch.save");
    auto [data, size] = zip->getRecord("data.pkl");
    pickle.assign(static_cast<const char*>(data.get()), size);
  } catch (const c10::Error& e) {
    SLAPO_FAIL(ErrorCode::kInvalidArgument, path, ": not a readable torch.save file (",
               e.what_without_backtrace(), ")");
  }
  Unpickler unpickler(path, pickle, *zip, mapping);
  const PyRef top = unpickler.run();
  const PyValue* dict = state_dict_of(*top);
  SLAPO_CHECK(dict != nullptr, ErrorCode::kInvalidArgument, path,
              ": holds no dict of tensors (at the top, or under 'state_dict' or 'model')");
  NamedTensors out;
  for (const auto& [key, value] : dict->dict) out.emplace_back(key->text, value->tensor);
  return out;
}

void write_torch_save(const std::string& path, const NamedTensors& tensors) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : tensors) {
    SLAPO_CHECK(!dict.contains(name), ErrorCode::kInvalidArgument, path, ": tensor name '", name,
                "' is repeated");
    dict.insert(name, tensor.detach());
  }
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(dict));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  SLAPO_CHECK(out.good(), ErrorCode::kInvalidArgument, path, ": writing the weights failed (",
              std::strerror(errno), ")");
}

}  // namespace slapo::models
