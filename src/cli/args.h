// The command line of `tracesmith`, without CLI11 in sight: CLI11 is
// header-only, and every file that includes <CLI/CLI.hpp> pays about 10 s of
// compiler CPU for it under the asan preset's flags, 6 s at -O2 (README.md).
// args.cc is the one translation unit that includes it; the command files go
// through the handles here. Cmd wraps a CLI::App, Opt a CLI::Option, and their methods have CLI11's
// names and do what CLI11's do (each forwards to the CLI11 call of the same
// name, with the same variable types), so --help and the errors read as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace tracesmith::cli {

struct ArgsStore;  // args.cc: the handles, owned by the root App

// A check on an option's values, as CLI::Range, CLI::PositiveNumber,
// CLI::NonNegativeNumber and CLI::ExistingFile (their descriptions show in --help).
class Validator {
 public:
  enum class Kind { kRange, kPositiveNumber, kNonNegativeNumber, kExistingFile };
  constexpr explicit Validator(Kind kind, uint32_t min = 0, uint32_t max = 0)
      : kind_(kind), min_(min), max_(max) {}
  Kind kind() const { return kind_; }
  uint32_t min() const { return min_; }
  uint32_t max() const { return max_; }

 private:
  Kind kind_;
  uint32_t min_, max_;
};

// CLI::Range(min, max) on unsigned values ("UINT in [min - max]"). Only
// unsigned: CLI::Range names the type of its bounds, so other types would
// change --help; they do not compile.
constexpr Validator Range(uint32_t min, uint32_t max) {
  return Validator(Validator::Kind::kRange, min, max);
}
template <typename T>
Validator Range(T min, T max) = delete;
inline constexpr Validator PositiveNumber{Validator::Kind::kPositiveNumber};
inline constexpr Validator NonNegativeNumber{Validator::Kind::kNonNegativeNumber};
inline constexpr Validator ExistingFile{Validator::Kind::kExistingFile};

// An option or flag of a command (CLI::Option). Valid as long as its root App.
class Opt {
 public:
  explicit Opt(CLI::Option* option) : option_(option) {}
  Opt(const Opt&) = delete;
  Opt& operator=(const Opt&) = delete;

  // The default shown in --help and set in the variable, as CLI11's default_val.
  Opt* default_val(const std::string& value);
  Opt* default_val(const char* value) { return default_val(std::string(value)); }
  Opt* default_val(int value);
  // Shows the variable's value when the option was added as the default in --help.
  Opt* capture_default_str();
  Opt* required(bool value = true);
  Opt* check(const Validator& validator);
  Opt* excludes(const std::string& other);  // another option of the same command, by name
  Opt* expected(int count);                 // -1: any number of values
  Opt* delimiter(char separator);           // "a,b" is two values
  std::string get_name() const;
  size_t count() const;  // times given on the command line

 private:
  CLI::Option* option_;
};

// A command or subcommand (CLI::App). Valid as long as its root App.
class Cmd {
 public:
  Cmd(CLI::App* app, ArgsStore* store) : app_(app), store_(store) {}
  Cmd(const Cmd&) = delete;
  Cmd& operator=(const Cmd&) = delete;

  Cmd* add_subcommand(const std::string& name, const std::string& description);
  // The subcommand added here under `name` (nullptr when there is none).
  Cmd* find_subcommand(const std::string& name) const;

  // An option that sets `variable`; its type decides the type name in --help
  // (TEXT, INT, UINT, FLOAT) and what it accepts, as in CLI11.
  Opt* add_option(const std::string& name, std::string& variable,
                  const std::string& description = "");
  Opt* add_option(const std::string& name, std::vector<std::string>& variable,
                  const std::string& description = "");
  Opt* add_option(const std::string& name, int& variable, const std::string& description = "");
  Opt* add_option(const std::string& name, int64_t& variable, const std::string& description = "");
  Opt* add_option(const std::string& name, uint64_t& variable,  // and size_t
                  const std::string& description = "");
  Opt* add_option(const std::string& name, uint32_t& variable, const std::string& description = "");
  Opt* add_option(const std::string& name, double& variable, const std::string& description = "");
  // An option whose values (as given) go to `callback`; false: not valid.
  Opt* add_option(const std::string& name,
                  std::function<bool(const std::vector<std::string>&)> callback,
                  const std::string& description = "");

  Opt* add_flag(const std::string& name, bool& variable, const std::string& description = "");
  // A flag with an optional value, as CLI11's string flags: "--name{dflt}"
  // given alone sets `variable` to dflt, "--name=VALUE" to VALUE.
  Opt* add_flag(const std::string& name, std::string& variable,
                const std::string& description = "");
  Opt* add_flag_callback(const std::string& name, std::function<void()> callback,
                         const std::string& description = "");
  // --version: prints version() and exits 0 (see App::Parse).
  Opt* set_version_flag(const std::string& name, std::function<std::string()> version,
                        const std::string& description);

  Cmd* name(const std::string& name);
  Cmd* footer(const std::string& footer);
  Cmd* require_subcommand(int count);
  Cmd* fallthrough(bool value = true);

  bool parsed() const;  // this command was given
  explicit operator bool() const { return parsed(); }
  const std::string& get_name() const;
  std::string help() const;  // the --help text
  size_t count(const std::string& option) const;

 protected:
  CLI::App* app_;
  ArgsStore* store_;
};

// The root command: owns CLI11's App and every handle.
class App : public Cmd {
 public:
  explicit App(const std::string& description);
  ~App();

  // Parses the command line. Returns the exit status when the parse ends the
  // program: 0 after printing --help or --version to stdout; kExitError
  // (exit_codes.h) after "tracesmith: error: <CLI11's message>" and a hint on
  // stderr for a usage error. std::nullopt: run the command parsed.
  std::optional<int> Parse(int argc, char** argv);

 private:
  std::unique_ptr<ArgsStore> owned_;
};

}  // namespace tracesmith::cli
