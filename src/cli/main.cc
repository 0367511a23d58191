// `tracesmith <command>`: a thin layer over the libraries.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "command.h"
#include "commands.h"
#include "huge_pages.h"
#include "tracesmith/base/atomic_file.h"

int main(int argc, char** argv) {
  using namespace tracesmith::cli;
  UseHugePages(argc, argv);
  App app{
      "TraceSmith: GPU profiling and replay for CUDA programs.\n"
      "Run 'tracesmith <command> --help' for a command's options."};
  app.name("tracesmith");
  app.footer(kExitHelp);
  app.require_subcommand(1);
  app.fallthrough(false);
  CommandList commands;
  AddAllCommands(app, commands);
  // `tracesmith help [command]` as a spelling of --help.
  auto* help = app.add_subcommand("help", "Show help for tracesmith or one command");
  std::vector<std::string> help_topic;
  help->add_option("command", help_topic, "Command to describe (and its subcommand)");
  // --help, --version and usage errors end here (args.cc: exit 0, or
  // "tracesmith: error: …" and exit status 1).
  if (std::optional<int> exit_code = app.Parse(argc, argv)) return *exit_code;
  if (help->parsed()) {
    if (!help_topic.empty()) {
      // `help benchmark`, `help benchmark scale`: each word a subcommand of the one before.
      const Cmd* topic = &app;
      std::string words;
      for (const std::string& word : help_topic) {
        words += (words.empty() ? "" : " ") + word;
        topic = topic->find_subcommand(word);
        if (topic == nullptr || word == "help") {
          std::fprintf(stderr, "tracesmith: error: unknown command '%s'\n", words.c_str());
          return 1;
        }
      }
      std::fputs(topic->help().c_str(), stdout);
      return 0;
    }
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  // Ctrl-C during an export or import removes its temporary file: nothing
  // partial is left behind (the target itself is only ever renamed over).
  tracesmith::InstallTempFileCleanupOnSignals();
  for (auto& [sub, run] : commands)
    if (sub->parsed()) return run();
  std::fputs(app.help().c_str(), stdout);
  return 1;
}
