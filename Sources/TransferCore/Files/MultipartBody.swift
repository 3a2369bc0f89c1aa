import TransferEngine
import TransferModel

/// A `multipart/form-data` body (RFC 7578) around a file: the text fields first, then the file
/// part, streamed from disk between a head and a tail held in memory. Its length is exact, so it
/// goes out with a `Content-Length`.
package struct MultipartBody: Sendable {
    let spec: MultipartSpec
    let defaultFilename: String
    package let boundary: String

    package init(spec: MultipartSpec, defaultFilename: String) {
        self.spec = spec
        self.defaultFilename = defaultFilename
        // 128 random bits: a boundary no file content will contain by chance.
        boundary = "transferd-" + RandomID.make() + RandomID.make()
    }

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    package func wrap(_ content: BodySegment) -> [BodySegment] {
        var head = ""
        for field in spec.fields {
            head += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(MultipartBody.quote(field.name))\"\r\n\r\n\(field.value)\r\n"
        }
        head += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(MultipartBody.quote(spec.field))\"; "
            + "filename=\"\(MultipartBody.quote(spec.filename ?? defaultFilename))\"\r\nContent-Type: \(spec.mimeType)\r\n\r\n"
        let tail = "\r\n--\(boundary)--\r\n"
        return [.bytes(Array(head.utf8)), content, .bytes(Array(tail.utf8))]
    }

    /// RFC 7578 §4.2: in a quoted name, `"`, CR and LF are percent-encoded (as browsers do).
    /// By Unicode scalar, not Character: CRLF is one Character, as is a quote followed by a
    /// combining mark, and matching Characters let both through into the part's header (found by
    /// FuzzMultipart).
    static func quote(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out.append(contentsOf: "%22".unicodeScalars)
            case "\r": out.append(contentsOf: "%0D".unicodeScalars)
            case "\n": out.append(contentsOf: "%0A".unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
    }
}
