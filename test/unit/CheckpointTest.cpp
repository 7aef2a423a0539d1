// Tests of safetensors checkpoints: round trips of every dtype, byte-for-byte determinism,
// readability by Python, an error naming the file for every kind of corrupt input, and failed or
// repeated saves that never leave partial or temporary files.
#include "runtime/train/Checkpoint.h"
#include "TempDir.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using namespace dtnn;
using namespace dtnn::runtime;
using ir::DType;
using ir::TensorType;
namespace fs = std::filesystem;

namespace {

constexpr const char *kPython = "/usr/bin/python3";

using dtnn::testing::readFile;
using dtnn::testing::TempDirTest;
using dtnn::testing::writeFile;
using CheckpointTest = TempDirTest;

// A tensor whose byte k holds (k * 37 + seed) % 251, or k % 2 for bool tensors.
Tensor makeTensor(DType dtype, std::vector<int64_t> dims, int seed = 0) {
  Tensor t(TensorType(dtype, std::move(dims)));
  auto *bytes = static_cast<uint8_t *>(t.raw());
  for (size_t k = 0; k < t.bytes(); ++k)
    bytes[k] = dtype == DType::Bool ? uint8_t(k % 2) : uint8_t((k * 37 + seed) % 251);
  return t;
}

// A checkpoint with a tensor of every dtype, a scalar, an empty tensor and awkward metadata.
Checkpoint sampleCheckpoint() {
  Checkpoint c;
  c.tensors.emplace("layer1.weight", makeTensor(DType::F32, {2, 3}, 1));
  c.tensors.emplace("layer1.bias", makeTensor(DType::F64, {4}, 2));
  c.tensors.emplace("labels", makeTensor(DType::I32, {3, 1}, 3));
  c.tensors.emplace("step", makeTensor(DType::I64, {}, 4));
  c.tensors.emplace("pixels", makeTensor(DType::U8, {5}, 5));
  c.tensors.emplace("mask", makeTensor(DType::Bool, {3}));
  c.tensors.emplace("empty", makeTensor(DType::F32, {0, 4}));
  c.tensors.emplace("scale", makeTensor(DType::F32, {}, 6));
  c.metadata["quote\"and\\backslash"] = "line one\nline two\ttab\r\x01\x1f";
  c.metadata["non-ascii"] = "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9d\x84\x9e";
  c.metadata[""] = "";
  c.metadata["format"] = "dtnn";
  return c;
}

void expectSameCheckpoint(const Checkpoint &a, const Checkpoint &b) {
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto &[name, t] : a.tensors) {
    auto it = b.tensors.find(name);
    ASSERT_NE(it, b.tensors.end()) << name;
    EXPECT_EQ(t.type(), it->second.type()) << name;
    ASSERT_EQ(t.bytes(), it->second.bytes()) << name;
    EXPECT_EQ(std::memcmp(t.raw(), it->second.raw(), t.bytes()), 0) << name;
  }
}

// A file holding an 8-byte header length (length, or the size of header), header and data.
std::string fileBytes(const std::string &header, const std::string &data = "",
                      std::optional<uint64_t> length = std::nullopt) {
  uint64_t n = length.value_or(header.size());
  std::string out;
  for (int i = 0; i < 8; ++i)
    out += char(n >> (8 * i));
  return out + header + data;
}

// The JSON of one tensor entry.
std::string entry(const std::string &name, const std::string &dtype, const std::string &shape,
                  const std::string &offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

bool pythonAvailable() { return ::access(kPython, X_OK) == 0; }

// Runs a Python script with the given arguments and returns its exit status.
int runPython(const std::string &scriptPath, const std::string &script,
              const std::vector<std::string> &args) {
  writeFile(scriptPath, script);
  std::string command = std::string(kPython) + " '" + scriptPath + "'";
  for (const std::string &a : args)
    command += " '" + a + "'";
  return std::system(command.c_str());
}

TEST_F(CheckpointTest, RoundTripsEveryDTypeAndMetadata) {
  Checkpoint c = sampleCheckpoint();
  ASSERT_FALSE(saveCheckpoint(path("a.safetensors"), c));
  Expected<Checkpoint> loaded = loadCheckpoint(path("a.safetensors"));
  ASSERT_TRUE(loaded) << loaded.error().message();
  expectSameCheckpoint(c, *loaded);
  EXPECT_EQ(loaded->tensors.at("step").type().rank(), 0u);
  EXPECT_EQ(listDir(), std::vector<std::string>{"a.safetensors"});
}

TEST_F(CheckpointTest, RoundTripsEmptyCheckpoint) {
  ASSERT_FALSE(saveCheckpoint(path("e.safetensors"), Checkpoint()));
  EXPECT_EQ(readFile(path("e.safetensors")), fileBytes("{}      "));
  Expected<Checkpoint> loaded = loadCheckpoint(path("e.safetensors"));
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_TRUE(loaded->tensors.empty());
  EXPECT_TRUE(loaded->metadata.empty());
}

TEST_F(CheckpointTest, WritesSortedKeysAndAlignedData) {
  Checkpoint c;
  c.tensors.emplace("c", makeTensor(DType::F64, {1}, 3));
  c.tensors.emplace("b", makeTensor(DType::F32, {2}, 2));
  c.tensors.emplace("a", makeTensor(DType::U8, {3}, 1));
  c.metadata["k"] = "v\"";
  ASSERT_FALSE(saveCheckpoint(path("h.safetensors"), c));
  std::string header = "{\"__metadata__\":{\"k\":\"v\\\"\"}," + entry("a", "U8", "[3]", "[16,19]") +
                       "," + entry("b", "F32", "[2]", "[8,16]") + "," +
                       entry("c", "F64", "[1]", "[0,8]") + "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  auto bytesOf = [&](const char *name) {
    const Tensor &t = c.tensors.at(name);
    return std::string(static_cast<const char *>(t.raw()), t.bytes());
  };
  EXPECT_EQ(readFile(path("h.safetensors")),
            fileBytes(header, bytesOf("c") + bytesOf("b") + bytesOf("a")));
}

TEST_F(CheckpointTest, OutputIsDeterministic) {
  Checkpoint a = sampleCheckpoint();
  Checkpoint b;
  for (auto it = a.tensors.rbegin(); it != a.tensors.rend(); ++it)
    b.tensors.emplace(it->first, it->second.clone());
  for (auto it = a.metadata.rbegin(); it != a.metadata.rend(); ++it)
    b.metadata.emplace(it->first, it->second);
  ASSERT_FALSE(saveCheckpoint(path("a.safetensors"), a));
  ASSERT_FALSE(saveCheckpoint(path("b.safetensors"), b));
  std::string first = readFile(path("a.safetensors"));
  EXPECT_EQ(first, readFile(path("b.safetensors")));
  ASSERT_FALSE(saveCheckpoint(path("a.safetensors"), a));
  EXPECT_EQ(first, readFile(path("a.safetensors")));
}

// Checks the header and data of argv[1] with nothing but the Python standard library.
constexpr const char *kCheckScript = R"PY(
import json, struct, sys
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
assert (8 + n) % 8 == 0, 'data is not 8-byte aligned'
header = json.loads(raw[8:8 + n].decode('utf-8'))
data = raw[8 + n:]
meta = header.pop('__metadata__')
assert meta['non-ascii'] == 'caf\u00e9 \u2713 \U0001d11e', meta
assert meta['quote"and\\backslash'] == 'line one\nline two\ttab\r\x01\x1f', meta
sizes = {'F32': 4, 'F64': 8, 'I32': 4, 'I64': 8, 'U8': 1, 'BOOL': 1}
assert list(header) == sorted(header), list(header)
end = 0
for name in sorted(header, key=lambda k: header[k]['data_offsets']):
    e = header[name]
    begin, stop = e['data_offsets']
    assert begin == end, (name, begin, end)
    assert begin % sizes[e['dtype']] == 0, (name, begin)
    count = 1
    for d in e['shape']:
        count *= d
    assert stop - begin == count * sizes[e['dtype']], name
    end = stop
assert end == len(data), (end, len(data))
assert header['step'] == {'dtype': 'I64', 'shape': [], 'data_offsets': [32, 40]}, header['step']
w = header['layer1.weight']
assert w['dtype'] == 'F32' and w['shape'] == [2, 3], w
begin, stop = w['data_offsets']
assert data[begin:stop] == bytes((k * 37 + 1) % 251 for k in range(24))
)PY";

TEST_F(CheckpointTest, HeaderIsJsonThatPythonReads) {
  if (!pythonAvailable())
    GTEST_SKIP() << kPython << " is not installed";
  ASSERT_FALSE(saveCheckpoint(path("p.safetensors"), sampleCheckpoint()));
  EXPECT_EQ(runPython(path("check.py"), kCheckScript, {path("p.safetensors")}), 0);
}

// A reader and a writer of its own, written to the published safetensors format with nothing
// but the Python standard library, independent of dtnn's: reads argv[1] as the format says
// (little-endian u64 header size, a JSON header of dtype, shape and [begin, end) offsets into
// the data that follows, string-to-string __metadata__) and decodes every value; then writes
// argv[2] as another writer may: keys unsorted, data out of key order, the header padded with
// spaces to 8 bytes.
constexpr const char *kInteropScript = R"PY(
import json, struct, sys
FORMATS = {'F32': 'f', 'F64': 'd', 'I32': 'i', 'I64': 'q', 'U8': 'B', 'BOOL': '?'}
raw = open(sys.argv[1], 'rb').read()
(n,) = struct.unpack('<Q', raw[:8])
header = json.loads(raw[8:8 + n].decode('utf-8'))
data = raw[8 + n:]
meta = header.pop('__metadata__', {})
assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()), meta
assert meta['non-ascii'] == 'caf\u00e9 \u2713 \U0001d11e', meta['non-ascii']
assert meta['quote"and\\backslash'] == 'line one\nline two\ttab\r\x01\x1f'
values = {}
covered = []
for name, e in header.items():
    fmt = FORMATS[e['dtype']]
    count = 1
    for d in e['shape']:
        count *= d
    begin, end = e['data_offsets']
    assert end - begin == count * struct.calcsize(fmt), name
    values[name] = struct.unpack('<%d%s' % (count, fmt), data[begin:end])
    covered.append((begin, end))
covered.sort()
assert [b for b, _ in covered] == [0] + [e for _, e in covered[:-1]], 'gaps or overlaps'
assert covered[-1][1] == len(data), 'trailing bytes'
pattern = lambda seed, k: bytes((i * 37 + seed) % 251 for i in range(k))
assert values['layer1.weight'] == struct.unpack('<6f', pattern(1, 24))
assert values['step'] == struct.unpack('<q', pattern(4, 8))
assert values['mask'] == (False, True, False)
assert values['empty'] == () and header['empty']['shape'] == [0, 4]
assert header['scale']['shape'] == []

tensors = [('y', 'I32', [2], struct.pack('<2i', 1, -2)),
           ('x', 'F64', [2, 3], struct.pack('<6d', *[k + 0.5 for k in range(6)])),
           ('b', 'BOOL', [3], bytes([1, 0, 1]))]
out_header, blobs, offset = {'__metadata__': {'m': 'v', 'writer': 'independent'}}, [], 0
for name, dtype, shape, blob in reversed(tensors):
    out_header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [offset, offset + len(blob)]}
    blobs.append(blob)
    offset += len(blob)
text = json.dumps(dict(reversed(list(out_header.items())))).encode('utf-8')
text += b' ' * (-len(text) % 8)
with open(sys.argv[2], 'wb') as f:
    f.write(struct.pack('<Q', len(text)) + text + b''.join(blobs))
)PY";

TEST_F(CheckpointTest, InteroperatesWithAnIndependentReaderAndWriter) {
  if (!pythonAvailable())
    GTEST_SKIP() << kPython << " is not installed";
  ASSERT_FALSE(saveCheckpoint(path("ours.safetensors"), sampleCheckpoint()));
  ASSERT_EQ(runPython(path("interop.py"), kInteropScript,
                      {path("ours.safetensors"), path("theirs.safetensors")}),
            0);
  Expected<Checkpoint> theirs = loadCheckpoint(path("theirs.safetensors"));
  ASSERT_TRUE(theirs) << theirs.error().message();
  EXPECT_EQ(theirs->metadata.at("m"), "v");
  EXPECT_EQ(theirs->metadata.at("writer"), "independent");
  EXPECT_EQ(theirs->tensors.at("x").type(), TensorType(DType::F64, {2, 3}));
  EXPECT_EQ(theirs->tensors.at("x").data<double>()[5], 5.5);
  EXPECT_EQ(theirs->tensors.at("y").data<int32_t>()[1], -2);
  EXPECT_EQ(theirs->tensors.at("b").type(), TensorType(DType::Bool, {3}));
  EXPECT_EQ(theirs->tensors.at("b").data<bool>()[2], true);
}

TEST_F(CheckpointTest, AcceptsValidHeadersFromOtherWriters) {
  // Keys out of data order, whitespace, escapes, null metadata, and no padding.
  std::string header = " {\n \"z\" : {\"shape\": [ 2 ], \"data_offsets\":[0, 2],\"dtype\":\"U8\"},"
                       "\"\\u00e9\\/\\ud834\\udd1e\":{\"dtype\":\"I32\",\"shape\":[1],"
                       "\"data_offsets\":[2,6]}, \"__metadata__\": null\t}\r\n";
  writeFile(path("o.safetensors"), fileBytes(header, std::string("\x01\x02\x07\0\0\0", 6)));
  Expected<Checkpoint> c = loadCheckpoint(path("o.safetensors"));
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_TRUE(c->metadata.empty());
  EXPECT_EQ(c->tensors.at("z").data<uint8_t>()[1], 2);
  EXPECT_EQ(c->tensors.at("\xc3\xa9/\xf0\x9d\x84\x9e").data<int32_t>()[0], 7);
}

// One corrupt file and a part of the error it must give.
struct Corruption {
  const char *what;
  std::string bytes;
  std::string error;
};

std::vector<Corruption> corruptions() {
  std::string w = entry("w", "F32", "[2]", "[0,8]");
  std::string eight(8, '\0');
  auto json = [](const std::string &body) { return "{" + body + "}"; };
  std::string ones65 = "1";
  for (int i = 0; i < 64; ++i)
    ones65 += ",1";
  return {
      {"empty file", "", "(0 bytes, too short for the 8-byte header length)"},
      {"7 bytes", std::string(7, '\x02'), "(7 bytes, too short"},
      {"huge header length", fileBytes("{}", "", uint64_t(1) << 63),
       "not a safetensors file (header length 9223372036854775808 exceeds file size 10)"},
      {"header past end", fileBytes(std::string(92, ' '), "", 123456789),
       "not a safetensors file (header length 123456789 exceeds file size 100)"},
      {"not JSON", fileBytes("hello"), "invalid header JSON at byte 0: expected '{'"},
      {"top-level array", fileBytes("[]"), "expected '{'"},
      {"not UTF-8", fileBytes("{\"\xff\":1}"), "header is not valid UTF-8 (byte 2)"},
      {"unterminated", fileBytes("{\"w\":{\"dtype\":\"F32"), "unterminated string"},
      {"missing comma", fileBytes(json(w + " " + w)), "expected '}'"},
      {"trailing garbage", fileBytes(json(w) + " x", eight), "unexpected characters after"},
      {"extra brace", fileBytes(json(w) + "}", eight), "unexpected characters after"},
      {"truncated data",
       fileBytes(json(entry("w", "F32", "[1024]", "[0,4096]")), std::string(100, 'x')),
       "truncated: tensor 'w' needs bytes [0, 4096) but the data holds 100"},
      {"trailing data", fileBytes(json(w), std::string(12, 'x')),
       "the data holds 12 bytes but the tensors use only 8"},
      {"offsets reversed", fileBytes(json(entry("w", "U8", "[0]", "[8,0]")), eight),
       "tensor 'w' has data_offsets [8, 0] that end before they begin"},
      {"offsets overlap",
       fileBytes(json(entry("a", "U8", "[8]", "[0,8]") + "," + entry("b", "U8", "[8]", "[4,12]")),
                 std::string(12, 'x')),
       "tensors 'a' and 'b' overlap (bytes [0, 8) and [4, 12))"},
      {"offsets leave a gap",
       fileBytes(json(entry("a", "U8", "[4]", "[0,4]") + "," + entry("b", "U8", "[4]", "[8,12]")),
                 std::string(12, 'x')),
       "bytes [4, 8) of the data belong to no tensor"},
      {"offsets out of range", fileBytes(json(entry("w", "U8", "[4]", "[4,8]")), eight),
       "bytes [0, 4) of the data belong to no tensor"},
      {"offset too large", fileBytes(json(entry("w", "U8", "[4]", "[0,99999999999999999999]"))),
       "integer too large"},
      {"three offsets", fileBytes(json(entry("w", "U8", "[4]", "[0,4,4]")), "abcd"),
       "data_offsets of tensor 'w' has more than 2 elements"},
      {"one offset", fileBytes(json(entry("w", "U8", "[4]", "[0]")), "abcd"),
       "data_offsets of tensor 'w' must hold two integers"},
      {"unknown dtype", fileBytes(json(entry("w", "F17", "[2]", "[0,8]")), eight),
       "tensor 'w' has the unsupported dtype 'F17'"},
      {"unsupported dtype", fileBytes(json(entry("w", "F16", "[4]", "[0,8]")), eight),
       "unsupported dtype 'F16'"},
      {"shape mismatch",
       fileBytes(json(entry("w", "F32", "[2,3]", "[0,20]")), std::string(20, 'x')),
       "tensor 'w' has shape [2,3] (6 elements of F32) but its data_offsets [0, 20) span 20 bytes"},
      {"negative dim", fileBytes(json(entry("w", "U8", "[-1]", "[0,0]"))),
       "expected a non-negative integer"},
      {"fractional dim", fileBytes(json(entry("w", "U8", "[1.0]", "[0,1]")), "x"),
       "expected an integer"},
      {"leading zero", fileBytes(json(entry("w", "U8", "[01]", "[0,1]")), "x"), "leading zero"},
      {"huge shape", fileBytes(json(entry("w", "U8", "[0,4294967296,4294967296]", "[0,0]"))),
       "the shape of tensor 'w' has too many elements"},
      {"rank too high", fileBytes(json(entry("w", "U8", "[" + ones65 + "]", "[0,1]")), "x"),
       "the shape of tensor 'w' has more than 64 elements"},
      {"duplicate tensor", fileBytes(json(w + "," + w), std::string(16, 'x')),
       "duplicate tensor 'w'"},
      {"duplicate metadata", fileBytes(json("\"__metadata__\":{},\"__metadata__\":{}")),
       "duplicate key '__metadata__'"},
      {"duplicate metadata key", fileBytes(json("\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}")),
       "duplicate metadata key 'k'"},
      {"metadata not string", fileBytes(json("\"__metadata__\":{\"k\":{\"x\":1}}")),
       "metadata value of 'k' is not a string"},
      {"duplicate field",
       fileBytes(json("\"w\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[],"
                      "\"data_offsets\":[0,1]}"),
                 "x"),
       "tensor 'w' has the field 'dtype' twice"},
      {"unknown field", fileBytes(json("\"w\":{\"dtype\":\"U8\",\"stride\":[1]}")),
       "tensor 'w' has an unknown field 'stride'"},
      {"missing field", fileBytes(json("\"w\":{\"dtype\":\"U8\",\"shape\":[]}")),
       "tensor 'w' lacks the field 'data_offsets'"},
      {"tensor not object", fileBytes(json("\"w\":[1]")), "expected '{'"},
      {"lone surrogate", fileBytes(json("\"\\ud800x\":{}")), "unpaired surrogate"},
      {"bad escape", fileBytes(json("\"\\x\":{}")), "invalid escape in string"},
      {"bad hex escape", fileBytes(json("\"\\u12g4\":{}")), "expected four hex digits"},
      {"control character", fileBytes(json("\"a\nb\":{}")), "control character in string"},
      {"bool byte", fileBytes(json(entry("m", "BOOL", "[2]", "[0,2]")), "\x01\x02"),
       "tensor 'm' of dtype BOOL holds a byte that is neither 0 nor 1"},
  };
}

TEST_F(CheckpointTest, CorruptFilesGiveErrorsNamingTheFile) {
  for (const Corruption &c : corruptions()) {
    SCOPED_TRACE(c.what);
    std::string file = path("bad.safetensors");
    writeFile(file, c.bytes);
    Expected<Checkpoint> loaded = loadCheckpoint(file);
    fs::remove(file);
    ASSERT_FALSE(loaded);
    const std::string &msg = loaded.error().message();
    EXPECT_EQ(msg.rfind(file + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.error), std::string::npos) << msg;
  }
}

TEST_F(CheckpointTest, MissingFileDirectoryAndFifoGiveErrors) {
  Expected<Checkpoint> missing = loadCheckpoint(path("missing.safetensors"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(),
            path("missing.safetensors") + ": cannot open: No such file or directory");
  Expected<Checkpoint> dir = loadCheckpoint(dir_.string());
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().message(), dir_.string() + ": is a directory");
  // A FIFO with no writer must not block the load.
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  Expected<Checkpoint> fifo = loadCheckpoint(path("fifo"));
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().message(), path("fifo") + ": is a FIFO, not a regular file");
}

TEST_F(CheckpointTest, HeaderLengthIsCapped) {
  // A sparse file larger than the cap, so that only the cap rejects the header length.
  std::string file = path("big.safetensors");
  writeFile(file, fileBytes("", "", kMaxCheckpointHeaderBytes + 1));
  fs::resize_file(file, kMaxCheckpointHeaderBytes + 100);
  Expected<Checkpoint> loaded = loadCheckpoint(file);
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().message(),
            file + ": header length 100000001 exceeds the limit of 100000000");
}

TEST_F(CheckpointTest, MutatedAndTruncatedFilesNeverCrash) {
  ASSERT_FALSE(saveCheckpoint(path("good.safetensors"), sampleCheckpoint()));
  std::string good = readFile(path("good.safetensors"));
  std::string file = path("fuzz.safetensors");
  std::mt19937 rng(1234);
  auto check = [&](const std::string &bytes) {
    // Writing a new file each time is much faster than truncating one on some file systems.
    writeFile(file, bytes);
    Expected<Checkpoint> loaded = loadCheckpoint(file);
    fs::remove(file);
    if (!loaded) {
      EXPECT_EQ(loaded.error().message().rfind(file + ": ", 0), 0u);
    }
  };
  for (size_t len = 0; len < good.size(); len += 3)
    check(good.substr(0, len));
  const char interesting[] = {'\0', '"', '\\', '{', '}', '[', ']', ',', ':', '9', '-', ' '};
  for (size_t i = 0; i < good.size() && i < 600; ++i) {
    std::string bytes = good;
    bytes[i] = i % 2 ? interesting[rng() % sizeof(interesting)] : char(rng());
    check(bytes);
  }
}

TEST_F(CheckpointTest, SaveReplacesExistingCheckpointCompletely) {
  ASSERT_FALSE(saveCheckpoint(path("c.safetensors"), sampleCheckpoint()));
  Checkpoint small;
  small.tensors.emplace("only", makeTensor(DType::I32, {2}, 9));
  ASSERT_FALSE(saveCheckpoint(path("c.safetensors"), small));
  Expected<Checkpoint> loaded = loadCheckpoint(path("c.safetensors"));
  ASSERT_TRUE(loaded) << loaded.error().message();
  expectSameCheckpoint(small, *loaded);
  EXPECT_EQ(listDir(), std::vector<std::string>{"c.safetensors"});
}

TEST_F(CheckpointTest, FailedSavesLeaveExistingFilesAlone) {
  writeFile(path("keep.safetensors"), "old content");
  Checkpoint bad;
  bad.tensors.emplace("__metadata__", makeTensor(DType::F32, {1}));
  Error e = saveCheckpoint(path("keep.safetensors"), bad);
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(),
            path("keep.safetensors") + ": '__metadata__' is reserved and cannot name a tensor");
  EXPECT_EQ(readFile(path("keep.safetensors")), "old content");

  fs::create_directory(path("adir"));
  writeFile(path("adir/inner"), "x");
  e = saveCheckpoint(path("adir"), sampleCheckpoint());
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(), "cannot write '" + path("adir") + "': it is a directory");
  EXPECT_EQ(readFile(path("adir/inner")), "x");

  e = saveCheckpoint(path("nodir/x.safetensors"), sampleCheckpoint());
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("cannot write '" + path("nodir/x.safetensors") + "': "),
            std::string::npos);
  EXPECT_NE(e.message().find("the folder '" + path("nodir") + "' does not exist"), std::string::npos)
      << e.message();
  EXPECT_EQ(listDir(), (std::vector<std::string>{"adir", "keep.safetensors"}));
}

TEST_F(CheckpointTest, RejectsCheckpointsItCannotStore) {
  Checkpoint noStorage;
  noStorage.tensors.emplace("x", Tensor(TensorType(DType::F32, {2})));
  noStorage.tensors.emplace("y", Tensor());
  Checkpoint badName;
  badName.tensors.emplace("bad\xff", makeTensor(DType::F32, {1}));
  Checkpoint badMeta;
  badMeta.metadata["k"] = "\xc0\x80";
  Error e = saveCheckpoint(path("n.safetensors"), badName);
  EXPECT_EQ(e.message(), path("n.safetensors") + ": tensor name 'bad\xff' is not valid UTF-8");
  e = saveCheckpoint(path("n.safetensors"), badMeta);
  EXPECT_EQ(e.message(), path("n.safetensors") + ": metadata value of 'k' is not valid UTF-8");
  e = saveCheckpoint(path("n.safetensors"), noStorage);
  EXPECT_EQ(e.message(), path("n.safetensors") + ": tensor 'y' has no storage");
  EXPECT_TRUE(listDir().empty());
}

} // namespace
