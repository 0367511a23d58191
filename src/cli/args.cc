// The one translation unit that includes CLI11 (args.h says why).
#include "args.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <deque>

#include "exit_codes.h"

namespace tracesmith::cli {

// Every handle given out, at a fixed address until the root App goes.
struct ArgsStore {
  CLI::App root;
  std::deque<Cmd> commands;
  std::deque<Opt> options;

  explicit ArgsStore(const std::string& description) : root(description) {}
  Opt* Add(CLI::Option* option) { return &options.emplace_back(option); }
};

namespace {

CLI::Validator ToCli(const Validator& v) {
  switch (v.kind()) {
    case Validator::Kind::kRange:
      return CLI::Range(v.min(), v.max());
    case Validator::Kind::kPositiveNumber:
      return CLI::PositiveNumber;
    case Validator::Kind::kNonNegativeNumber:
      return CLI::NonNegativeNumber;
    case Validator::Kind::kExistingFile:
      return CLI::ExistingFile;
  }
  return CLI::Validator();
}

}  // namespace

// Opt

Opt* Opt::default_val(const std::string& value) {
  option_->default_val(value);
  return this;
}

Opt* Opt::default_val(int value) {
  option_->default_val(value);
  return this;
}

Opt* Opt::capture_default_str() {
  option_->capture_default_str();
  return this;
}

Opt* Opt::required(bool value) {
  option_->required(value);
  return this;
}

Opt* Opt::check(const Validator& validator) {
  option_->check(ToCli(validator));
  return this;
}

Opt* Opt::excludes(const std::string& other) {
  option_->excludes(other);
  return this;
}

Opt* Opt::expected(int count) {
  option_->expected(count);
  return this;
}

Opt* Opt::delimiter(char separator) {
  option_->delimiter(separator);
  return this;
}

std::string Opt::get_name() const { return option_->get_name(); }

size_t Opt::count() const { return option_->count(); }

// Cmd

Cmd* Cmd::add_subcommand(const std::string& name, const std::string& description) {
  return &store_->commands.emplace_back(app_->add_subcommand(name, description), store_);
}

Cmd* Cmd::find_subcommand(const std::string& name) const {
  for (Cmd& c : store_->commands)
    if (c.app_->get_parent() == app_ && c.app_->get_name() == name) return &c;
  return nullptr;
}

Opt* Cmd::add_option(const std::string& name, std::string& variable,
                     const std::string& description) {
  return store_->Add(app_->add_option(name, variable, description));
}

Opt* Cmd::add_option(const std::string& name, std::vector<std::string>& variable,
                     const std::string& description) {
  return store_->Add(app_->add_option(name, variable, description));
}

Opt* Cmd::add_option(const std::string& name, int& variable, const std::string& description) {
  return store_->Add(app_->add_option(name, variable, description));
}

Opt* Cmd::add_option(const std::string& name, int64_t& variable, const std::string& description) {
  return store_->Add(app_->add_option(name, variable, description));
}

Opt* Cmd::add_option(const std::string& name, uint64_t& variable, const std::string& description) {
  return store_->Add(app_->add_option(name, variable, description));
}

Opt* Cmd::add_option(const std::string& name, uint32_t& variable, const std::string& description) {
  return store_->Add(app_->add_option(name, variable, description));
}

Opt* Cmd::add_option(const std::string& name, double& variable, const std::string& description) {
  return store_->Add(app_->add_option(name, variable, description));
}

Opt* Cmd::add_option(const std::string& name,
                     std::function<bool(const std::vector<std::string>&)> callback,
                     const std::string& description) {
  return store_->Add(app_->add_option(name, CLI::callback_t(std::move(callback)), description));
}

Opt* Cmd::add_flag(const std::string& name, bool& variable, const std::string& description) {
  return store_->Add(app_->add_flag(name, variable, description));
}

Opt* Cmd::add_flag(const std::string& name, std::string& variable, const std::string& description) {
  return store_->Add(app_->add_flag(name, variable, description));
}

Opt* Cmd::add_flag_callback(const std::string& name, std::function<void()> callback,
                            const std::string& description) {
  return store_->Add(app_->add_flag_callback(name, std::move(callback), description));
}

Opt* Cmd::set_version_flag(const std::string& name, std::function<std::string()> version,
                           const std::string& description) {
  return store_->Add(app_->set_version_flag(name, std::move(version), description));
}

Cmd* Cmd::name(const std::string& name) {
  app_->name(name);
  return this;
}

Cmd* Cmd::footer(const std::string& footer) {
  app_->footer(footer);
  return this;
}

Cmd* Cmd::require_subcommand(int count) {
  app_->require_subcommand(count);
  return this;
}

Cmd* Cmd::fallthrough(bool value) {
  app_->fallthrough(value);
  return this;
}

bool Cmd::parsed() const { return app_->parsed(); }

const std::string& Cmd::get_name() const { return app_->get_name(); }

std::string Cmd::help() const { return app_->help(); }

size_t Cmd::count(const std::string& option) const { return app_->count(option); }

// App

App::App(const std::string& description)
    : Cmd(nullptr, nullptr), owned_(std::make_unique<ArgsStore>(description)) {
  app_ = &owned_->root;
  store_ = owned_.get();
}

App::~App() = default;

std::optional<int> App::Parse(int argc, char** argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end the parse with a "success" (exit 0).
    if (e.get_exit_code() == 0) return app_->exit(e);
    // Usage errors (a missing or unreadable file, an unknown option) are
    // errors like any other: "tracesmith: error:", exit status 1 (CLI11's
    // own codes, 105-113, are not ours).
    std::fprintf(stderr,
                 "tracesmith: error: %s\nRun 'tracesmith help' or 'tracesmith <command> --help' "
                 "for the options.\n",
                 e.what());
    return kExitError;
  }
  return std::nullopt;
}

}  // namespace tracesmith::cli
