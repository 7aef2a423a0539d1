// Tests of the .npz reader: the files numpy.savez and savez_compressed wrote (Inputs/npz, made by
// make_fixtures.py there), zips built here for the cases numpy does not write (zip64 records,
// other header spellings) and for every corruption the reader must name, npyLabels, and the
// streamed chunks (NpzChunks): the epoch's order and the chunk cache.
#include "runtime/train/data/Npz.h"
#include "runtime/train/data/NpzChunks.h"

#include "test/unit/TempDir.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>

using namespace dtnn;
using dtnn::testing::readFile;
using dtnn::testing::TempDirTest;
using dtnn::testing::writeFile;

namespace {

// The build defines DTNN_UNIT_INPUTS as the absolute path of test/unit/Inputs; without it, the
// folder is found next to this source.
#ifdef DTNN_UNIT_INPUTS
const std::string kInputs = std::string(DTNN_UNIT_INPUTS) + "/npz/";
#else
const std::string kInputs =
    (std::filesystem::path(__FILE__).parent_path() / "Inputs" / "npz").string() + "/";
#endif

// Appends the n-byte little-endian v.
void put(std::string &s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s += char(v >> (8 * i));
}

// A .npy file: magic, version, header length, the dict padded to 64 bytes with a newline.
std::string npy(const std::string &dict, const std::string &data, int major = 1) {
  size_t lenBytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((8 + lenBytes + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string s = std::string("\x93NUMPY", 6) + char(major) + char(0);
  put(s, header.size(), int(lenBytes));
  return s + header + data;
}

// The .npy header dict of a C-ordered array.
std::string dict(const std::string &descr, const std::string &shape) {
  return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
}

// Raw deflate of bytes.
std::string deflateRaw(const std::string &bytes) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, uLong(bytes.size())), '\0');
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data()));
  z.avail_in = uInt(bytes.size());
  z.next_out = reinterpret_cast<Bytef *>(out.data());
  z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// One member of a zip built by makeZip, and how to spoil it.
struct Entry {
  std::string name;
  std::string bytes;
  uint16_t method = 0;    // 0 stored, 8 deflated, others written as stored bytes
  size_t cut = 0;         // compressed bytes dropped from the end
  uint32_t crcXor = 0;    // flips bits of the recorded CRC
  uint64_t claimMore = 0; // added to both sizes in the central directory
  uint64_t claimSize = 0; // when not 0, the uncompressed size in the central directory
};

// Appends each (value, byte count) field, little-endian.
void put(std::string &s, std::initializer_list<std::pair<uint64_t, int>> fields) {
  for (auto [v, n] : fields) put(s, v, n);
}

// A zip archive as numpy writes one, or with zip64 sizes in the central directory and zip64 end
// records, and a comment.
std::string makeZip(const std::vector<Entry> &entries, bool zip64 = false,
                    const std::string &comment = "") {
  std::string out, dir;
  for (const Entry &e : entries) {
    std::string data = e.method == 8 ? deflateRaw(e.bytes) : e.bytes;
    data.resize(data.size() - e.cut);
    const auto *bytes = reinterpret_cast<const Bytef *>(e.bytes.data());
    uint32_t crc = uint32_t(crc32(0, bytes, uInt(e.bytes.size()))) ^ e.crcXor;
    uint64_t size = e.claimSize ? e.claimSize : e.bytes.size() + e.claimMore;
    uint64_t csize = data.size() + e.claimMore, offset = out.size();
    uint64_t version = zip64 ? 45 : 20, date = 0x21; // 1980-01-01
    // Local header: signature, version, flags, method, time, date, CRC, sizes, name, extra.
    put(out, {{0x04034b50, 4}, {version, 2}, {0, 2}, {e.method, 2}, {0, 2}, {date, 2}, {crc, 4}});
    put(out, {{data.size(), 4}, {e.bytes.size(), 4}, {e.name.size(), 2}, {0, 2}});
    out += e.name + data;
    std::string extra;
    if (zip64) {
      put(extra, {{1, 2}, {24, 2}, {size, 8}, {csize, 8}, {offset, 8}});
      size = csize = offset = 0xFFFFFFFF;
    }
    // Central directory entry: the same, then the comment length, disk, attributes, offset.
    put(dir, {{0x02014b50, 4}, {20, 2}, {version, 2}, {0, 2}, {e.method, 2}, {0, 2}, {date, 2}});
    put(dir, {{crc, 4}, {csize, 4}, {size, 4}, {e.name.size(), 2}, {extra.size(), 2}});
    put(dir, {{0, 2}, {0, 2}, {0, 2}, {0, 4}, {offset, 4}});
    dir += e.name + extra;
  }
  uint64_t dirOffset = out.size(), count = entries.size();
  out += dir;
  if (zip64) {
    uint64_t end64 = out.size();
    put(out, {{0x06064b50, 4}, {44, 8}, {45, 2}, {45, 2}, {0, 4}, {0, 4}});
    put(out, {{count, 8}, {count, 8}, {dir.size(), 8}, {dirOffset, 8}});
    put(out, {{0x07064b50, 4}, {0, 4}, {end64, 8}, {1, 4}});
  }
  uint64_t count16 = zip64 ? 0xFFFF : count;
  put(out, {{0x06054b50, 4}, {0, 2}, {0, 2}, {count16, 2}, {count16, 2}});
  put(out, {{zip64 ? 0xFFFFFFFF : dir.size(), 4}, {zip64 ? 0xFFFFFFFF : dirOffset, 4}});
  put(out, {{comment.size(), 2}});
  return out + comment;
}

// The message of a failed read (or a note that it did not fail).
template <typename T> std::string failure(Expected<T> x) {
  return x ? std::string("(no error)") : x.error().message();
}

// The fixtures' x: 4x3x5x5 bytes counting up modulo 251.
void expectFixtureX(const NpyArray &x) {
  EXPECT_EQ(x.dtype, "|u1");
  EXPECT_EQ(x.shape, (std::vector<int64_t>{4, 3, 5, 5}));
  ASSERT_EQ(x.data.size(), 300u);
  EXPECT_EQ(x.numel(), 300);
  for (size_t i = 0; i < x.data.size(); ++i) ASSERT_EQ(x.data[i], i % 251) << "at " << i;
}

using NpzTest = TempDirTest;
using NpzHeaderTest = TempDirTest;
using NpzErrorTest = TempDirTest;

TEST(NpzFixtureTest, ReadsSavezAndSavezCompressed) {
  for (const char *file : {"stored.npz", "deflated.npz"}) {
    SCOPED_TRACE(file);
    Expected<NpyArray> x = readNpzArray(kInputs + file, "x");
    ASSERT_TRUE(x) << x.error().message();
    expectFixtureX(*x);
    Expected<NpyArray> y = readNpzArray(kInputs + file, "y");
    ASSERT_TRUE(y) << y.error().message();
    EXPECT_EQ(y->dtype, "<i8");
    EXPECT_EQ(y->shape, (std::vector<int64_t>{4}));
    Expected<std::vector<int32_t>> labels = npyLabels(*y, 0);
    ASSERT_TRUE(labels) << labels.error().message();
    EXPECT_EQ(*labels, (std::vector<int32_t>{3, 0, 9, 7}));
  }
}

TEST(NpzFixtureTest, HeaderOnly) {
  Expected<NpyArray> x = readNpzHeader(kInputs + "deflated.npz", "x");
  ASSERT_TRUE(x) << x.error().message();
  EXPECT_EQ(x->dtype, "|u1");
  EXPECT_EQ(x->shape, (std::vector<int64_t>{4, 3, 5, 5}));
  EXPECT_TRUE(x->data.empty());
}

TEST(NpzFixtureTest, OneHotLabels) {
  Expected<NpyArray> y = readNpzArray(kInputs + "onehot.npz", "y");
  ASSERT_TRUE(y) << y.error().message();
  EXPECT_EQ(y->dtype, "<f4");
  EXPECT_EQ(y->shape, (std::vector<int64_t>{4, 10}));
  Expected<std::vector<int32_t>> labels = npyLabels(*y, 0);
  ASSERT_TRUE(labels) << labels.error().message();
  EXPECT_EQ(*labels, (std::vector<int32_t>{3, 0, 9, 7}));
}

TEST(NpzFixtureTest, RefusesFortranBigEndianAndObjectArrays) {
  std::string fortran = failure(readNpzArray(kInputs + "fortran.npz", "a"));
  EXPECT_EQ(fortran, kInputs + "fortran.npz: member a.npy is Fortran-ordered (fortran_order "
                               "True); only C-ordered arrays are read");
  EXPECT_EQ(failure(readNpzArray(kInputs + "bigendian.npz", "a")),
            kInputs + "bigendian.npz: member a.npy is big-endian (type '>i4'); only "
                      "little-endian arrays are read");
  EXPECT_EQ(failure(readNpzHeader(kInputs + "object.npz", "a")),
            kInputs + "object.npz: member a.npy holds Python objects (type '|O'), which only "
                      "pickle can read");
}

TEST(NpzFixtureTest, MissingArrayListsTheOthers) {
  EXPECT_EQ(failure(readNpzArray(kInputs + "stored.npz", "z")),
            kInputs + "stored.npz: has no array 'z' (it holds: x, y)");
}

TEST_F(NpzTest, Zip64RecordsAndComment) {
  std::string y;
  put(y, {{5, 8}, {1, 8}});
  std::string bytes = makeZip({{"x.npy", npy(dict("<i8", "(2,)"), y), 8}, {"note.txt", "hello", 0}},
                              true, "an archive comment with PK\x05\x06 inside");
  writeFile(path("z.npz"), bytes);
  Expected<NpyArray> a = readNpzArray(path("z.npz"), "x");
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->dtype, "<i8");
  Expected<std::vector<int32_t>> labels = npyLabels(*a, 1);
  ASSERT_TRUE(labels) << labels.error().message();
  EXPECT_EQ(*labels, (std::vector<int32_t>{4, 0}));
  EXPECT_EQ(failure(readNpzArray(path("z.npz"), "q")),
            path("z.npz") + ": has no array 'q' (it holds: x, note.txt)");
}

TEST_F(NpzTest, HeaderSpellings) {
  const char *dicts[] = {
      "{'shape': (3,), 'fortran_order': False, 'descr': '<u2'}",
      "{ \"descr\" : \"<u2\" ,\"fortran_order\":False,\"shape\":( 3 , ) , }",
      "{'descr': '=u2', 'fortran_order': False, 'shape': (3L,)}",
  };
  std::string data("\x01\x00\x02\x00\xff\xff", 6);
  for (const char *d : dicts) {
    for (int major : {1, 2, 3}) {
      SCOPED_TRACE(std::string(d) + " v" + std::to_string(major));
      writeFile(path("h.npz"), makeZip({{"a.npy", npy(d, data, major)}}));
      Expected<NpyArray> a = readNpzArray(path("h.npz"), "a");
      ASSERT_TRUE(a) << a.error().message();
      EXPECT_EQ(a->dtype, "<u2");
      EXPECT_EQ(a->shape, (std::vector<int64_t>{3}));
      Expected<std::vector<int32_t>> labels = npyLabels(*a, 0);
      ASSERT_TRUE(labels) << labels.error().message();
      EXPECT_EQ(*labels, (std::vector<int32_t>{1, 2, 65535}));
    }
  }
}

TEST_F(NpzTest, ScalarAndEmptyArrays) {
  std::string one;
  put(one, 0x3ff0000000000000, 8); // 1.0
  writeFile(path("s.npz"), makeZip({{"s.npy", npy(dict("<f8", "()"), one)},
                                    {"e.npy", npy(dict("|u1", "(0, 3, 4)"), ""), 8}}));
  Expected<NpyArray> s = readNpzArray(path("s.npz"), "s");
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->numel(), 1);
  EXPECT_EQ(s->data.size(), 8u);
  Expected<NpyArray> e = readNpzArray(path("s.npz"), "e");
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(e->numel(), 0);
  EXPECT_TRUE(e->data.empty());
}

// A large deflated member whose recorded CRC is wrong: the header reads, which shows it inflates
// only the start; the whole array fails the check.
TEST_F(NpzHeaderTest, DecompressesOnlyTheHeader) {
  std::string zeros(std::string(16 << 20, '\0'));
  writeFile(path("big.npz"), makeZip({{"x.npy", npy(dict("|u1", "(16777216,)"), zeros), 8, 0, 1}}));
  EXPECT_LT(readFile(path("big.npz")).size(), 64u << 10);
  Expected<NpyArray> h = readNpzHeader(path("big.npz"), "x");
  ASSERT_TRUE(h) << h.error().message();
  EXPECT_EQ(h->shape, (std::vector<int64_t>{16 << 20}));
  EXPECT_TRUE(h->data.empty());
  std::string message = failure(readNpzArray(path("big.npz"), "x"));
  EXPECT_NE(message.find(path("big.npz") + ": member x.npy fails its CRC check"), std::string::npos)
      << message;
}

TEST_F(NpzErrorTest, NotAZipEmptyTruncated) {
  writeFile(path("text.npz"), "just some text that is long enough to search through\n");
  EXPECT_EQ(failure(readNpzArray(path("text.npz"), "x")),
            path("text.npz") + ": not a zip archive (an .npz file)");
  writeFile(path("empty.npz"), "");
  EXPECT_EQ(failure(readNpzHeader(path("empty.npz"), "x")),
            path("empty.npz") + ": not a zip archive (an .npz file)");
  std::string whole = readFile(kInputs + "stored.npz");
  ASSERT_GT(whole.size(), 100u);
  for (size_t keep : {whole.size() - 1, whole.size() - 30, size_t(100), size_t(4)}) {
    writeFile(path("cut.npz"), whole.substr(0, keep));
    std::string message = failure(readNpzArray(path("cut.npz"), "x"));
    EXPECT_NE(message.find("truncated zip archive"), std::string::npos) << keep << message;
  }
}

TEST_F(NpzErrorTest, NotARegularFile) {
  EXPECT_EQ(failure(readNpzArray(dir_.string(), "x")), dir_.string() + ": is a directory");
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_EQ(failure(readNpzArray(path("fifo"), "x")),
            path("fifo") + ": is a FIFO, not a regular file");
  std::string message = failure(readNpzArray(path("absent.npz"), "x"));
  EXPECT_EQ(message.rfind(path("absent.npz") + ": cannot open: ", 0), 0u) << message;
}

TEST_F(NpzErrorTest, CrcMismatch) {
  std::string bytes = readFile(kInputs + "stored.npz");
  size_t at = bytes.find(std::string("\x10\x11\x12", 3)); // inside x's data
  ASSERT_NE(at, std::string::npos);
  bytes[at] ^= 0x40;
  writeFile(path("flip.npz"), bytes);
  EXPECT_EQ(failure(readNpzArray(path("flip.npz"), "x")),
            path("flip.npz") + ": member x.npy fails its CRC check (its data gives 0x56ef5c38, "
                               "its zip entry says 0x9c877a3e)");
  // The other member is untouched.
  EXPECT_TRUE(readNpzArray(path("flip.npz"), "y"));
}

TEST_F(NpzErrorTest, FlippedDeflateByte) {
  std::string bytes = readFile(kInputs + "deflated.npz");
  // Near the end of x's deflate stream, which starts 55 bytes in (30 + "x.npy" + a 20-byte
  // zip64 extra field), past the .npy header.
  size_t csize = uint8_t(bytes[18]) | uint8_t(bytes[19]) << 8;
  ASSERT_GT(csize, 100u);
  bytes[55 + csize - 20] ^= 0x55;
  writeFile(path("flip.npz"), bytes);
  std::string message = failure(readNpzArray(path("flip.npz"), "x"));
  EXPECT_EQ(message.rfind(path("flip.npz") + ": member x.npy ", 0), 0u) << message;
  EXPECT_TRUE(message.find("CRC") != std::string::npos ||
              message.find("corrupt") != std::string::npos ||
              message.find("truncated") != std::string::npos)
      << message;
}

TEST_F(NpzErrorTest, TruncatedMembers) {
  std::string x = npy(dict("|u1", "(4103,)"), std::string(4096, 'a') + "bcdefgh");
  writeFile(path("cut.npz"), makeZip({{"x.npy", x, 8, 3}}));
  EXPECT_EQ(failure(readNpzArray(path("cut.npz"), "x"))
                .rfind(path("cut.npz") + ": member x.npy is truncated", 0),
            0u);
  writeFile(path("past.npz"), makeZip({{"x.npy", x, 0, 0, 0, 1 << 20}}));
  EXPECT_EQ(failure(readNpzArray(path("past.npz"), "x")),
            path("past.npz") + ": member x.npy is truncated");
  // Entry sizes, and a shape, larger than the deflate stream holds.
  std::string y = npy(dict("|u1", "(4107,)"), std::string(4096, 'a') + "bcdefgh");
  writeFile(path("short.npz"), makeZip({{"x.npy", y, 8, 0, 0, 4}}));
  EXPECT_EQ(failure(readNpzArray(path("short.npz"), "x")),
            path("short.npz") + ": member x.npy is truncated (its deflate stream ends early)");
  // Entry sizes smaller than the deflate stream holds.
  std::string z = npy(dict("|u1", "(4099,)"), std::string(4096, 'a') + "bcd");
  writeFile(path("long.npz"), makeZip({{"x.npy", z + "efgh", 8, 0, 0, 0, z.size()}}));
  EXPECT_EQ(failure(readNpzArray(path("long.npz"), "x")),
            path("long.npz") + ": member x.npy holds more data than its zip entry's size says");
}

TEST_F(NpzErrorTest, SizeAndShapeDisagree) {
  writeFile(path("n.npz"), makeZip({{"x.npy", npy(dict("<i4", "(2, 3)"), std::string(20, 0))}}));
  EXPECT_EQ(failure(readNpzHeader(path("n.npz"), "x")),
            path("n.npz") + ": member x.npy holds 20 bytes of data but its shape (2, 3) of type "
                            "'<i4' needs 24");
  writeFile(path("o.npz"), makeZip({{"x.npy", npy(dict("<i8", "(4294967296, 4294967296)"), "")}}));
  EXPECT_EQ(failure(readNpzHeader(path("o.npz"), "x")),
            path("o.npz") + ": member x.npy holds 0 bytes of data but its shape (4294967296, "
                            "4294967296) of type '<i8' needs over 2^64");
}

TEST_F(NpzErrorTest, BadHeaders) {
  struct Case {
    std::string npy, message;
  } cases[] = {
      {"not numpy at all", "is not a .npy array (no \\x93NUMPY magic)"},
      {std::string("\x93NUMPY\x04\x00\x10\x00{}", 12) + std::string(14, ' '),
       "has .npy format version 4.0; versions 1.0, 2.0 and 3.0 are read"},
      {npy("{'descr': '<i4', 'fortran_order': False}", ""),
       "has a malformed .npy header: no 'shape' key at byte 54"},
      {npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3), }", "abcdefghijkl"),
       "has a malformed .npy header: a one-dimensional shape needs a trailing comma, (N,) at "
       "byte 53"},
      {npy("{'descr': '<i4', 'fortran_order': 0, 'shape': (3,)}", "abcdefghijkl"),
       "has a malformed .npy header: expected True or False at byte 34"},
      {npy("{'descr': '<i4', 'colour': 'red'}", ""),
       "has a malformed .npy header: unexpected key 'colour' at byte 27"},
      {npy("{'descr': '<i4 'fortran_order': False, 'shape': (3,)}", ""),
       "has a malformed .npy header: expected ',' or '}' at byte 16"},
      {npy("{'descr': '<i4', 'fortran_order': False, 'shape': (-3,)}", ""),
       "has a malformed .npy header: expected a dimension at byte 51"},
      {npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,)} x", "abcdefghijkl"),
       "has a malformed .npy header: unexpected text after '}' at byte 56"},
      {npy(dict("<U5", "(1,)"), std::string(20, 'a')),
       "has type '<U5', which is not supported (only bool, integer, float and complex arrays "
       "are)"},
      {npy("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,)}", "abcd"),
       "has a malformed .npy header: a structured type (a list of fields) is not supported at "
       "byte 10"},
      {npy(dict("<f16", "(1,)"), std::string(16, 'a')),
       "has type '<f16', which is not supported (only bool, integer, float and complex arrays "
       "are)"},
      {std::string("\x93NUMPY\x01\x00\xff\xff", 10) + "{", "is truncated (in its .npy header)"},
      {std::string("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12) + "{",
       "has a .npy header of 2147483647 bytes, more than 65536"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.message);
    writeFile(path("b.npz"), makeZip({{"x.npy", c.npy, 8}}));
    EXPECT_EQ(failure(readNpzArray(path("b.npz"), "x")),
              path("b.npz") + ": member x.npy " + c.message);
  }
}

TEST_F(NpzErrorTest, CorruptArchives) {
  std::string good = makeZip({{"x.npy", npy(dict("|u1", "(2,)"), "ab")}});
  writeFile(path("m.npz"), makeZip({{"x.npy", "whatever", 12}}));
  EXPECT_EQ(failure(readNpzArray(path("m.npz"), "x")),
            path("m.npz") + ": member x.npy uses compression method 12; only stored (0) and "
                            "deflate (8) are supported");
  // The central directory's offset (the last 4 bytes before the comment length) past the end.
  std::string bad = good;
  bad[bad.size() - 3] = char(0x7f);
  writeFile(path("d.npz"), bad);
  EXPECT_EQ(failure(readNpzArray(path("d.npz"), "x")),
            path("d.npz") + ": corrupt zip archive (its central directory lies outside the file)");
  // The local header's signature spoilt.
  bad = good;
  bad[0] = 'Q';
  writeFile(path("l.npz"), bad);
  EXPECT_EQ(failure(readNpzArray(path("l.npz"), "x")),
            path("l.npz") + ": corrupt zip archive (no local header for x.npy at offset 0)");
  // A deflated entry claiming more than deflate could ever expand to.
  writeFile(path("r.npz"), makeZip({{"x.npy", "ab", 8, 0, 0, 0, 1 << 30}}));
  std::string message = failure(readNpzArray(path("r.npz"), "x"));
  EXPECT_NE(message.find("more than deflate can produce"), std::string::npos) << message;
  std::vector<Entry> many;
  for (int i = 0; i < 12; ++i) many.push_back({"a" + std::to_string(i) + ".npy", ""});
  writeFile(path("many.npz"), makeZip(many));
  EXPECT_EQ(failure(readNpzArray(path("many.npz"), "x")),
            path("many.npz") +
                ": has no array 'x' (it holds: a0, a1, a2, a3, a4, a5, a6, a7, a8, a9 and 2 more)");
  writeFile(path("none.npz"), makeZip({}));
  EXPECT_EQ(failure(readNpzArray(path("none.npz"), "x")),
            path("none.npz") + ": has no array 'x' (it holds: none)");
}

// An array of the given type and shape holding these values, each in `size` bytes.
NpyArray array(const std::string &dtype, std::vector<int64_t> shape,
               const std::vector<uint64_t> &values, int size) {
  NpyArray a{dtype, std::move(shape), {}};
  for (uint64_t v : values)
    for (int i = 0; i < size; ++i) a.data.push_back(uint8_t(v >> (8 * i)));
  return a;
}

TEST(NpzLabelsTest, IntegerTypes) {
  struct Case {
    const char *dtype;
    int size;
  } cases[] = {{"|u1", 1}, {"|i1", 1}, {"<u2", 2}, {"<i2", 2},
               {"<u4", 4}, {"<i4", 4}, {"<u8", 8}, {"<i8", 8}};
  for (const Case &c : cases) {
    SCOPED_TRACE(c.dtype);
    Expected<std::vector<int32_t>> l = npyLabels(array(c.dtype, {3}, {1, 5, 100}, c.size), 1);
    ASSERT_TRUE(l) << l.error().message();
    EXPECT_EQ(*l, (std::vector<int32_t>{0, 4, 99}));
    l = npyLabels(array(c.dtype, {3, 1}, {1, 5, 100}, c.size), 0);
    ASSERT_TRUE(l) << l.error().message();
    EXPECT_EQ(*l, (std::vector<int32_t>{1, 5, 100}));
  }
  Expected<std::vector<int32_t>> l = npyLabels(array("=i2", {2}, {7, 8}, 2), 0);
  ASSERT_TRUE(l) << l.error().message();
  EXPECT_EQ(*l, (std::vector<int32_t>{7, 8}));
  l = npyLabels(array("<i4", {0}, {}, 4), 0);
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->empty());
}

TEST(NpzLabelsTest, OutOfRange) {
  EXPECT_EQ(failure(npyLabels(array("|i1", {2}, {1, 0xff}, 1), 0)),
            "label -1 at index 1 minus the offset 0 is -1, not a class number (0..2147483647)");
  EXPECT_EQ(failure(npyLabels(array("<i2", {2}, {1, 0}, 2), 1)),
            "label 0 at index 1 minus the offset 1 is -1, not a class number (0..2147483647)");
  EXPECT_EQ(failure(npyLabels(array("<u8", {1}, {~uint64_t(0)}, 8), -5)),
            "label 18446744073709551615 at index 0 minus the offset -5 is 18446744073709551620, "
            "not a class number (0..2147483647)");
  EXPECT_EQ(failure(npyLabels(array("<i8", {1}, {uint64_t(1) << 31}, 8), 0)),
            "label 2147483648 at index 0 minus the offset 0 is 2147483648, not a class number "
            "(0..2147483647)");
  EXPECT_TRUE(npyLabels(array("<i8", {1}, {uint64_t(1) << 31}, 8), 1));
}

TEST(NpzLabelsTest, OneHot) {
  Expected<std::vector<int32_t>> l =
      npyLabels(array("|u1", {3, 4}, {0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1}, 1), 0);
  ASSERT_TRUE(l) << l.error().message();
  EXPECT_EQ(*l, (std::vector<int32_t>{2, 0, 3}));
  l = npyLabels(array("<f2", {2, 2}, {0x3c00, 0x8000, 0, 0x3c00}, 2), 0);
  ASSERT_TRUE(l) << l.error().message();
  EXPECT_EQ(*l, (std::vector<int32_t>{0, 1}));
  l = npyLabels(array("<f8", {1, 3}, {0, 0, 0x3ff0000000000000}, 8), 0);
  ASSERT_TRUE(l) << l.error().message();
  EXPECT_EQ(*l, (std::vector<int32_t>{2}));
  l = npyLabels(array("|b1", {2, 2}, {0, 1, 1, 0}, 1), 0);
  ASSERT_TRUE(l) << l.error().message();
  EXPECT_EQ(*l, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(failure(npyLabels(array("<i4", {2, 3}, {0, 1, 0, 0, 1, 1}, 4), 0)),
            "row 1 of the labels is not one-hot (it has 2 ones)");
  EXPECT_EQ(failure(npyLabels(array("<f4", {1, 2}, {0x3f000000, 0}, 4), 0)),
            "row 0 of the labels is not one-hot (column 0 holds 0.500000)");
  EXPECT_EQ(failure(npyLabels(array("<f4", {1, 2}, {0x7fc00000, 0}, 4), 0)),
            "row 0 of the labels is not one-hot (column 0 holds nan)");
  EXPECT_EQ(failure(npyLabels(array("<f4", {1, 0}, {}, 4), 0)),
            "row 0 of the labels is not one-hot (it has 0 ones)");
  EXPECT_EQ(failure(npyLabels(array("<f4", {1, 2}, {0, 0x3f800000}, 4), 2)),
            "label 1 at index 0 minus the offset 2 is -1, not a class number (0..2147483647)");
}

TEST(NpzLabelsTest, RefusedShapesAndTypes) {
  EXPECT_EQ(failure(npyLabels(array("<f4", {2}, {0, 0}, 4), 0)),
            "the labels have shape (2,) and type '<f4': labels are integers of shape (N,) or "
            "(N, 1), or one-hot rows (N, C)");
  EXPECT_EQ(failure(npyLabels(array("<i4", {1, 1, 1}, {0}, 4), 0)),
            "the labels have shape (1, 1, 1) and type '<i4': labels are integers of shape (N,) "
            "or (N, 1), or one-hot rows (N, C)");
  EXPECT_EQ(failure(npyLabels(array("<c8", {1, 1}, {0}, 8), 0)),
            "the labels have shape (1, 1) and type '<c8': labels are integers of shape (N,) or "
            "(N, 1), or one-hot rows (N, C)");
  EXPECT_EQ(failure(npyLabels(array(">i4", {1}, {0}, 4), 0)),
            "the labels' array is big-endian (type '>i4'); only little-endian arrays are read");
  EXPECT_EQ(failure(npyLabels(array("<i4", {3}, {0, 1}, 4), 0)),
            "the labels' 8 bytes do not match their shape (3,) and type '<i4'");
  EXPECT_EQ(failure(npyLabels(array("<i4", {-1}, {0}, 4), 0)),
            "the labels' 4 bytes do not match their shape (-1,) and type '<i4'");
}

// Chunks of 5, 3, 7, 1 and 4 samples (no files: orders read none).
NpzChunks fiveChunks(int64_t window) {
  return NpzChunks({"a", "b", "c", "d", "e"}, {5, 3, 7, 1, 4}, {1, 2, 2}, window);
}

TEST(NpzChunksTest, ChunkOfSample) {
  NpzChunks c = fiveChunks(2);
  EXPECT_EQ(c.count(), 20);
  EXPECT_EQ(c.chunkOf(0), 0u);
  EXPECT_EQ(c.chunkOf(4), 0u);
  EXPECT_EQ(c.chunkOf(5), 1u);
  EXPECT_EQ(c.chunkOf(15), 3u);
  EXPECT_EQ(c.chunkOf(16), 4u);
  EXPECT_EQ(c.chunkOf(19), 4u);
  EXPECT_EQ(c.firstSample(2), 8);
}

// An epoch's order holds each index once, and each window of chunks in it holds the samples of
// `window` whole chunks: a cache of two windows serves every batch.
TEST(NpzChunksTest, OrderIsAPermutationAWindowOfChunksAtATime) {
  NpzChunks c = fiveChunks(2);
  std::vector<int64_t> all(20);
  for (int64_t i = 0; i < 20; ++i) all[size_t(i)] = i;
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    std::vector<int64_t> order = c.shuffled(all, 7, epoch);
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, all);
    // Walk the windows: the chunks of the first samples of each, two at a time.
    size_t at = 0;
    std::set<size_t> seen;
    while (at < order.size()) {
      std::set<size_t> window;
      int64_t size = 0;
      for (size_t k = at; k < order.size() && window.size() <= 2; ++k) {
        size_t chunk = c.chunkOf(order[k]);
        if (!window.count(chunk) && window.size() == 2) break;
        if (window.insert(chunk).second) size += c.firstSample(chunk + 1) - c.firstSample(chunk);
      }
      for (int64_t k = 0; k < size; ++k) EXPECT_TRUE(window.count(c.chunkOf(order[at + size_t(k)])));
      for (size_t chunk : window) EXPECT_TRUE(seen.insert(chunk).second) << "chunk " << chunk;
      at += size_t(size);
    }
    EXPECT_EQ(seen.size(), 5u);
  }
  // The same seed and epoch give the same order; another epoch another.
  EXPECT_EQ(c.shuffled(all, 7, 1), c.shuffled(all, 7, 1));
  EXPECT_NE(c.shuffled(all, 7, 1), c.shuffled(all, 7, 2));
  EXPECT_NE(c.shuffled(all, 7, 1), c.shuffled(all, 8, 1));
}

// A subset of the samples (the training part of a validation split) is ordered alone.
TEST(NpzChunksTest, OrderOfASubset) {
  NpzChunks c = fiveChunks(3);
  std::vector<int64_t> some = {0, 3, 6, 9, 12, 15, 18};
  std::vector<int64_t> order = c.shuffled(some, 1, 0);
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, some);
}

using NpzChunksCacheTest = TempDirTest;

// A chunk file of n samples [1, 2, 2] whose bytes are the sample's number plus the position.
std::string chunkFile(int64_t first, int64_t n) {
  std::string x;
  for (int64_t s = 0; s < n; ++s)
    for (int k = 0; k < 4; ++k) x += char(uint8_t(first + s + k));
  std::string y(size_t(n), '\0');
  return makeZip({{"x.npy", npy(dict("|u1", "(" + std::to_string(n) + ", 1, 2, 2)"), x), 8},
                  {"y.npy", npy(dict("|u1", "(" + std::to_string(n) + ",)"), y)}});
}

// The cache holds two windows of chunks, decompresses each chunk once while it stays, and gives
// every thread the same pixels.
TEST_F(NpzChunksCacheTest, DecompressesAChunkOnceWhileItIsCached) {
  std::vector<std::string> files;
  std::vector<int64_t> counts = {3, 2, 4};
  int64_t first = 0;
  for (size_t c = 0; c < counts.size(); ++c) {
    files.push_back(path("c" + std::to_string(c) + ".npz"));
    writeFile(files.back(), chunkFile(first, counts[c]));
    first += counts[c];
  }
  NpzChunks chunks(files, counts, {1, 2, 2}, 1); // a cache of two chunks
  std::vector<std::thread> threads;
  std::vector<NpzChunks::Pixels> got(4);
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] { got[t] = *chunks.pixels(1); });
  for (std::thread &t : threads) t.join();
  EXPECT_EQ(chunks.loads(), 1);
  for (const auto &p : got) EXPECT_EQ(p, got[0]);
  ASSERT_EQ(got[0]->size(), 8u);
  EXPECT_EQ((*got[0])[0], 3);  // sample 3 (the chunk's first), position 0
  EXPECT_EQ((*got[0])[7], 7);  // sample 4, position 3
  ASSERT_TRUE(chunks.pixels(0));
  EXPECT_EQ(chunks.loads(), 2);
  ASSERT_TRUE(chunks.pixels(1)); // still cached
  EXPECT_EQ(chunks.loads(), 2);
  ASSERT_TRUE(chunks.pixels(2)); // evicts chunk 0, used longest ago
  ASSERT_TRUE(chunks.pixels(1));
  EXPECT_EQ(chunks.loads(), 3);
  ASSERT_TRUE(chunks.pixels(0));
  EXPECT_EQ(chunks.loads(), 4);
  // A chunk rewritten with another shape after indexing is refused, naming the file.
  writeFile(files[2], chunkFile(5, 3));
  NpzChunks changed(files, counts, {1, 2, 2}, 1);
  Expected<NpzChunks::Pixels> bad = changed.pixels(2);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), files[2] + ": 'x' changed since the chunks were indexed (it is "
                                              "no longer uint8 of the shape it had)");
}

} // namespace
