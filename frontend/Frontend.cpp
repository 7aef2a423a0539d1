#include "frontend/Frontend.h"

#include "frontend/Elaborator.h"
#include "frontend/Parse.h"
#include "frontend/Resolve.h"
#include "frontend/TrainSection.h"
#include "ir/OpTable.h"
#include "ir/SourceFile.h"

#include <pthread.h>

#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>

namespace fs = std::filesystem;

namespace dtnn::frontend {

namespace {

// Runs `fn` on a thread with a large stack, so that deep but legal inputs
// are bounded by the front end's own limits rather than the process stack.
// An exception thrown by `fn` (std::bad_alloc) is rethrown to the caller.
void runWithLargeStack(const std::function<void()> &fn) {
  struct Job {
    const std::function<void()> &fn;
    std::exception_ptr error;
  } job{fn, nullptr};
  auto trampoline = [](void *p) -> void * {
    Job &j = *static_cast<Job *>(p);
    try {
      j.fn();
    } catch (...) {
      j.error = std::current_exception();
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t{512} << 20);
  pthread_t thread;
  bool started = pthread_create(&thread, &attr, trampoline, &job) == 0;
  pthread_attr_destroy(&attr);
  if (started) pthread_join(thread, nullptr);
  else trampoline(&job);
  if (job.error) std::rethrow_exception(job.error);
}

// Reads a whole file; reports a diagnostic naming the file on failure.
bool readFile(const std::string &path, const SourceLoc &from, std::string &text,
              DiagnosticEngine &diags) {
  Expected<std::string> read = readSourceFile(path, ".dtnn file");
  if (!read) {
    diags.error(from.known() ? from : SourceLoc{path, 0, 0}, read.error().message());
    return false;
  }
  text = std::move(*read);
  // Textual IR (dtnnc compile's output) is not a model; the parser would stop at its first '.'.
  size_t first = text.find_first_not_of(" \t\r\n");
  for (const char *start : {"train {", "param @", "buffer @", "graph @"})
    if (first != std::string::npos && text.compare(first, std::strlen(start), start) == 0) {
      diags.error(from.known() ? from : SourceLoc{path, 0, 0},
                  "'" + path + "' is textual IR, not a .dtnn model (`dtnnc opt` reads IR; "
                  "dtnn-run and `dtnnc compile` take the .dtnn file it came from)");
      return false;
    }
  return true;
}

// Finds an imported file: next to the importing file, then in each import dir.
// Also returns the name IR locations use for it: the importing file's IR
// name's folder joined with the import path, or the path within the import dir.
std::pair<std::string, std::string> resolveImport(const std::string &importer,
                                                  const std::string &importerIrName,
                                                  const std::string &target,
                                                  const CompileOptions &opts) {
  std::error_code ec;
  fs::path local = fs::path(importer).parent_path() / target;
  // Anything of that name: reading it reports a directory or a FIFO as such.
  if (fs::exists(local, ec))
    return {local.lexically_normal().string(),
            (fs::path(importerIrName).parent_path() / target).lexically_normal().string()};
  for (const auto &d : opts.importDirs) {
    fs::path p = fs::path(d) / target;
    if (fs::exists(p, ec))
      return {p.lexically_normal().string(), fs::path(target).lexically_normal().string()};
  }
  return {"", ""};
}

// Parses the main file and, transitively, everything it imports. Each file is
// loaded once, so import cycles are harmless; loading more than
// kMaxLoadedFiles files is an error at the import that would load one more.
bool loadProgram(const std::string &name, std::string text, const CompileOptions &opts,
                 SourceManager &sm, DiagnosticEngine &diags, Program &program) {
  std::set<std::string> seen;
  std::map<std::string, std::string> pathOf; // canonical path -> the path the file was read by
  std::error_code ec;
  struct Pending {
    std::string path;
    std::string text;
  };
  std::deque<Pending> work;
  work.push_back({name, std::move(text)});
  seen.insert(fs::weakly_canonical(name, ec).string());
  pathOf[fs::weakly_canonical(name, ec).string()] = name;
  // Each file's imports, as canonical paths, with where they are written.
  std::map<std::string, std::vector<std::pair<std::string, SourceLoc>>> imports;
  program.irFileNames[name] = fs::path(name).filename().string();
  while (!work.empty()) {
    Pending p = std::move(work.front());
    work.pop_front();
    const std::string &stored = sm.add(p.path, std::move(p.text));
    auto file = parseSource(p.path, stored, diags);
    if (!file) {
      if (diags.tooManyErrors()) return false;
      continue;
    }
    for (const ImportDecl &imp : file->imports) {
      auto [found, irName] = resolveImport(p.path, program.irFileNames[p.path], imp.path, opts);
      if (found.empty()) {
        diags.error(imp.loc, "cannot find imported file '" + imp.path + "'");
        continue;
      }
      std::string key = fs::weakly_canonical(found, ec).string();
      imports[p.path].push_back({key, imp.loc});
      if (seen.count(key)) continue;
      if (seen.size() >= kMaxLoadedFiles) {
        diags.error(imp.loc, "cannot import '" + imp.path + "': a compilation loads at most " +
                                 std::to_string(kMaxLoadedFiles) +
                                 " files (the main file and every file it imports, directly or not)");
        return false;
      }
      seen.insert(key);
      pathOf[key] = found;
      program.irFileNames[found] = irName;
      std::string importedText;
      if (readFile(found, imp.loc, importedText, diags))
        work.push_back({found, std::move(importedText)});
    }
    program.files.push_back(std::move(file));
  }
  if (diags.hasErrors()) return false;
  std::map<std::string, OwnBlocks> own;
  for (const auto &file : program.files)
    for (const auto &b : file->blocks) {
      if (ir::OpTable::get().lookup(b->name)) {
        diags.error(b->loc, "block '" + b->name + "' has the name of a built-in layer");
        continue;
      }
      const auto &builtins = builtinFunctionNames();
      if (std::find(builtins.begin(), builtins.end(), b->name) != builtins.end()) {
        diags.error(b->loc, "block '" + b->name + "' has the name of a built-in function");
        continue;
      }
      auto [it, inserted] = own[file->path].emplace(b->name, b.get());
      if (!inserted) {
        Diagnostic d{Severity::Error, b->loc, "redefinition of block '" + b->name + "'", {}};
        d.note(it->second->loc, "previous definition is here");
        diags.report(d);
      }
    }
  std::map<std::string, size_t> indexOf;
  for (const auto &file : program.files) indexOf.emplace(file->path, indexOf.size());
  std::vector<BlockScopes::File> scopeFiles;
  for (const auto &file : program.files) {
    BlockScopes::File f{file->path, std::move(own[file->path]), {}};
    for (const auto &[key, loc] : imports[file->path])
      if (auto target = indexOf.find(pathOf.at(key)); target != indexOf.end())
        f.imports.push_back({target->second, loc});
    scopeFiles.push_back(std::move(f));
  }
  program.scopes.build(std::move(scopeFiles), diags);
  std::map<std::string, const ModelDecl *> models;
  for (const auto &m : program.files.front()->models) {
    auto [it, inserted] = models.emplace(m->name, m.get());
    if (!inserted) {
      Diagnostic d{Severity::Error, m->loc, "redefinition of model '" + m->name + "'", {}};
      d.note(it->second->loc, "previous definition is here");
      diags.report(d);
    }
  }
  return !diags.hasErrors();
}

// Picks the model to build from the main file.
const ModelDecl *selectModel(const FileAst &main, const CompileOptions &opts,
                             DiagnosticEngine &diags) {
  std::vector<std::string> names;
  for (const auto &m : main.models) names.push_back(m->name);
  if (!opts.modelName.empty()) {
    for (const auto &m : main.models)
      if (m->name == opts.modelName) return m.get();
    std::string hint = closestMatch(opts.modelName, names);
    diags.error({main.path, 0, 0}, "no model named '" + opts.modelName + "'" +
                                       (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    return nullptr;
  }
  if (main.models.size() == 1) return main.models.front().get();
  if (main.models.empty()) {
    diags.error({main.path, 0, 0}, "file defines no model");
    return nullptr;
  }
  std::string list;
  for (const auto &n : names) list += (list.empty() ? "" : ", ") + n;
  diags.error({main.path, 0, 0}, "file defines " + std::to_string(names.size()) + " models (" +
                                     list + "); choose one with --model");
  return nullptr;
}

std::unique_ptr<ir::Module> compileLoaded(const std::string &name, std::string text,
                                          const CompileOptions &opts, SourceManager &sm,
                                          DiagnosticEngine &diags) {
  Program program;
  if (!loadProgram(name, std::move(text), opts, sm, diags, program)) return nullptr;
  const FileAst &main = *program.files.front();
  checkTrainSections(main, diags);
  resolveNames(program, diags);
  const ModelDecl *model = selectModel(main, opts, diags);
  if (!model || diags.hasErrors()) return nullptr;
  // The train section first: its init_defaults decides how the layers are built.
  ir::AttrMap config;
  for (const auto &t : main.trains)
    if (t->model == model->name) evalTrainSection(*t, config, diags);
  const ir::AttrValue *init = config.find("init_defaults");
  bool pytorchInit = init && std::holds_alternative<std::string>(*init) &&
                     std::get<std::string>(*init) == "pytorch";
  Elaborator elab(program, diags, pytorchInit);
  auto module = elab.buildModel(*model);
  if (!module) return nullptr;
  module->trainConfig() = std::move(config);
  if (diags.hasErrors()) return nullptr;
  return module;
}

} // namespace

std::unique_ptr<ir::Module> compileSource(const std::string &name, std::string text,
                                          const CompileOptions &opts, SourceManager &sm,
                                          DiagnosticEngine &diags) {
  std::unique_ptr<ir::Module> result;
  runWithLargeStack([&] { result = compileLoaded(name, std::move(text), opts, sm, diags); });
  return result;
}

std::unique_ptr<ir::Module> compileFile(const std::string &path, const CompileOptions &opts,
                                        SourceManager &sm, DiagnosticEngine &diags) {
  std::string text;
  if (!readFile(path, {}, text, diags)) return nullptr;
  return compileSource(path, std::move(text), opts, sm, diags);
}

bool dumpAst(const std::string &path, const CompileOptions &, SourceManager &sm,
             DiagnosticEngine &diags, std::ostream &os) {
  std::string text;
  if (!readFile(path, {}, text, diags)) return false;
  bool ok = false;
  runWithLargeStack([&] {
    const std::string &stored = sm.add(path, std::move(text));
    auto file = parseSource(path, stored, diags);
    if (!file) return;
    printAst(*file, os);
    ok = true;
  });
  return ok;
}

} // namespace dtnn::frontend
