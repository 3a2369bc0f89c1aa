/// Header fields in the order received. Names keep their case for echoing back; lookups ignore case
/// (RFC 9110 §5.1: field names are case-insensitive).
public struct HTTPHeaders: Sendable, Sequence {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}

    /// Room for `capacity` fields, so that adding them does not grow the storage step by step.
    public init(capacity: Int) {
        fields.reserveCapacity(capacity)
    }

    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field of that name with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// The first value of the field, if present.
    public subscript(_ name: String) -> String? {
        for field in fields where field.name.equalsIgnoringASCIICase(name) { return field.value }
        return nil
    }

    /// Every value of the field, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}

extension String {
    /// ASCII case-insensitive equality without allocating lowercased copies. Compares the UTF-8
    /// storage directly: going through `zip` of the two UTF-8 views cost several times more.
    public func equalsIgnoringASCIICase(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        var a = self, b = other
        return a.withUTF8 { x in
            b.withUTF8 { y in
                for i in 0..<x.count where ASCII.lowercased(x[i]) != ASCII.lowercased(y[i]) { return false }
                return true
            }
        }
    }
}
