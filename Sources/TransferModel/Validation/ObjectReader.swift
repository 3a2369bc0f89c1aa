import JSON

/// Reads the members of a JSON object for validation, naming the field in every complaint and
/// refusing members it was never asked about (`finish`), so a typo is an error, not a silent default.
package struct ObjectReader {
    let path: String
    private let members: [(String, JSONValue)]
    /// Which members were asked about, by position: cheaper than hashing every name asked for (a
    /// task has some twenty), which showed in the cost of bulk creation.
    private var seen: [Bool]

    package init(_ value: JSONValue, path: String) throws(Refusal) {
        guard case .object(let members) = value else {
            throw Refusal.invalid(path.isEmpty ? "body" : path, "must be a JSON object, not \(value.typeName)")
        }
        self.members = members
        self.path = path
        seen = Array(repeating: false, count: members.count)
    }

    package func field(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The member's value (marking it as asked about), absent or not.
    private mutating func member(_ key: String) -> JSONValue? {
        guard let index = members.firstIndex(where: { $0.0 == key }) else { return nil }
        seen[index] = true
        return members[index].1
    }

    /// The member's value, null treated as absent.
    package mutating func raw(_ key: String) -> JSONValue? {
        guard let value = member(key), value != .null else { return nil }
        return value
    }

    /// Absent → nil; `null` → `.some(nil)`; a value → `.some(v)`.
    package mutating func nullableRaw(_ key: String) -> JSONValue?? {
        guard let value = member(key) else { return nil }
        return value == .null ? .some(nil) : .some(value)
    }

    mutating func has(_ key: String) -> Bool {
        members.contains { $0.0 == key && $0.1 != .null }
    }

    package mutating func string(_ key: String, maxLength: Int = 65536) throws(Refusal) -> String? {
        guard let value = raw(key) else { return nil }
        guard case .string(let s) = value else { throw Refusal.invalid(field(key), "must be a string, not \(value.typeName)") }
        guard s.utf8.count <= maxLength else { throw Refusal.invalid(field(key), "is longer than \(maxLength) bytes") }
        return s
    }

    /// Absent → nil; `null` → `.some(nil)` (clear the value); a string → `.some(s)`.
    package mutating func nullableString(_ key: String, maxLength: Int = 65536) throws(Refusal) -> String?? {
        guard let value = member(key) else { return nil }
        if value == .null { return .some(nil) }
        return .some(try string(key, maxLength: maxLength))
    }

    package mutating func requiredString(_ key: String, maxLength: Int = 65536) throws(Refusal) -> String {
        guard let s = try string(key, maxLength: maxLength) else { throw Refusal.invalid(field(key), "is required") }
        return s
    }

    package mutating func number(_ key: String, in range: ClosedRange<Double>) throws(Refusal) -> Double? {
        guard let value = raw(key) else { return nil }
        guard case .number(let n) = value else { throw Refusal.invalid(field(key), "must be a number, not \(value.typeName)") }
        guard range.contains(n) else { throw Refusal.invalid(field(key), "must be between \(range.lowerBound) and \(range.upperBound)") }
        return n
    }

    package mutating func integer(_ key: String, in range: ClosedRange<Int64>) throws(Refusal) -> Int64? {
        guard let value = raw(key) else { return nil }
        guard let n = value.intValue else { throw Refusal.invalid(field(key), "must be an integer") }
        guard range.contains(n) else { throw Refusal.invalid(field(key), "must be between \(range.lowerBound) and \(range.upperBound)") }
        return n
    }

    package mutating func bool(_ key: String) throws(Refusal) -> Bool? {
        guard let value = raw(key) else { return nil }
        guard case .bool(let b) = value else { throw Refusal.invalid(field(key), "must be true or false, not \(value.typeName)") }
        return b
    }

    package mutating func object(_ key: String) throws(Refusal) -> ObjectReader? {
        guard let value = raw(key) else { return nil }
        return try ObjectReader(value, path: field(key))
    }

    package mutating func array(_ key: String, maxCount: Int = 10_000) throws(Refusal) -> [JSONValue]? {
        guard let value = raw(key) else { return nil }
        guard case .array(let items) = value else { throw Refusal.invalid(field(key), "must be an array, not \(value.typeName)") }
        guard items.count <= maxCount else { throw Refusal.invalid(field(key), "has more than \(maxCount) items") }
        return items
    }

    /// A string-to-string map, such as request headers.
    mutating func stringMap(_ key: String) throws(Refusal) -> [(String, String)]? {
        guard let object = try object(key) else { return nil }
        var result: [(String, String)] = []
        for (name, value) in object.members {
            guard case .string(let s) = value else {
                throw Refusal.invalid(object.field(name), "must be a string, not \(value.typeName)")
            }
            result.append((name, s))
        }
        return result
    }

    /// Members that were never read are typos or features we do not have: refuse them.
    /// Every such member is named, not only the first.
    package func finish() throws(Refusal) {
        var errors = FieldErrors()
        for (index, wasSeen) in seen.enumerated() where !wasSeen {
            try errors.check { () throws(Refusal) in
                throw Refusal.invalid(field(members[index].0), "is not a known field", code: "unknown_field")
            }
        }
        try errors.finish()
    }
}
