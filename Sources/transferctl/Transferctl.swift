import ArgumentParser
import Foundation

/// The root command. `main` maps every way of ending to the documented exit codes: 2 for usage
/// (ArgumentParser's own would be 64), and each `Failure`'s code.
@main
struct Transferctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transferctl",
        abstract: "The operator's command line for transferd.",
        discussion: """
        Talks to transferd's public API (--server, TRANSFERD_URL; default http://127.0.0.1:8080) with \
        the token in --token or TRANSFERD_TOKEN. Tasks go to --session or TRANSFERD_SESSION, else to a \
        background session named transferctl.<user>, created on first use.

        Exit codes: 0 done, 1 a task failed or its origin answered >= 400, 2 usage, 3 transferd \
        unreachable, 4 unauthorised or forbidden, 130 interrupted (the tasks keep running).

        Examples:
          transferctl download https://example.com/big.iso -o /srv/downloads/big.iso
          transferctl tasks ls --json | jq .id
          transferctl top
        """,
        version: "0.1.0",
        subcommands: [
            Download.self, Upload.self, Wait.self, Sessions.self, Tasks.self, Events.self,
            Deliveries.self, Redeliver.self, Blobs.self, Stats.self, Whoami.self, Top.self,
        ])

    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Glibc.exit(0)
        } catch {
            if let failure = Failure.from(error) {
                Terminal.write("transferctl: \(failure)\n")
                Glibc.exit(failure.exitCode)
            }
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Glibc.exit(0)
            }
            Terminal.write(fullMessage(for: error) + "\n")
            Glibc.exit(code == .validationFailure ? 2 : code.rawValue)
        }
    }
}
