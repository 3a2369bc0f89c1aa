import FuzzSupport
import JSON
import TransferModel
import TransferVocabulary

/// A task as a client POSTs it (TaskCreationRequest.parse), the input being the JSON document.
///
/// Properties: what is accepted is what curl can be given safely: the method is a token, no
/// header name or value can end the header line (CR, LF, NUL) or name a framing header, and the
/// URL is http or https.
@main enum FuzzTaskCreation {
    static func main() {
        fuzzMain { input in
            guard let value = try? JSONParser.parse(Array(input)),
                  let task = try? TaskCreationRequest.parse(value, field: "task") else { return }
            fuzzCheck(!task.method.isEmpty && !task.method.utf8.contains { $0 <= 0x20 || $0 >= 0x7F }, "method is not a token")
            for header in task.headers {
                fuzzCheck(!header.name.isEmpty && !header.name.utf8.contains { $0 <= 0x20 || $0 >= 0x7F || $0 == 0x3A },
                          "header name \(header.name) is not a token")
                fuzzCheck(!header.value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }, "header value holds CR, LF or NUL")
                fuzzCheck(!["host", "content-length", "transfer-encoding"].contains(header.name.lowercased()),
                          "framing header \(header.name) accepted")
            }
            fuzzCheck(task.url.isEmpty ? task.resumeToken != nil : URLParts(task.url)?.isHTTP == true,
                      "URL \(task.url) is not http(s)")
        }
    }
}
