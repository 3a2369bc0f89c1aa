import FuzzSupport
import JSON
import TransferModel

/// A session's `configuration` and `delegate` as a client PUTs them; the input is one JSON
/// document given to both parsers.
///
/// Properties: an accepted configuration's echo (GET) is valid JSON with every credential's
/// secret redacted and no header holding CR, LF or NUL; an accepted delegate's echo never shows
/// its secret.
@main enum FuzzSessionConfiguration {
    static func main() {
        fuzzMain { input in
            guard let value = try? JSONParser.parse(Array(input)) else { return }
            if let configuration = try? SessionConfiguration.parse(value) {
                checkEcho(of: configuration)
            }
            if let (delegate, _) = try? Delegate.parse(value) {
                var json = JSONWriter()
                delegate.encode(into: &json)
                let echo = try? JSONParser.parse(json.bytes)
                fuzzCheck(echo != nil && echo?["secret"] == nil, "the delegate's echo is not JSON or shows the secret")
            }
        }
    }

    static func checkEcho(of configuration: SessionConfiguration) {
        fuzzCheck(configuration.headers.allSatisfy { !$0.value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 } },
                  "a header value holds CR, LF or NUL")
        for mode in SessionMode.allCases {
            var json = JSONWriter()
            configuration.encode(into: &json, mode: mode)
            guard let echo = try? JSONParser.parse(json.bytes) else { fuzzCheck(false, "the echo is not JSON"); return }
            for credential in echo["credentials"]?.arrayValue ?? [] {
                let secret = credential["password"] ?? credential["token"]
                fuzzCheck(secret?.stringValue == SessionConfiguration.redacted, "a credential's secret is echoed")
            }
        }
    }
}
