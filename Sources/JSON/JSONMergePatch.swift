extension JSONValue {
    /// This value with `patch` applied as a JSON Merge Patch (RFC 7396 §2): an object patch
    /// changes the members it names (recursively), `null` removes one, anything else replaces the
    /// whole value.
    public func merged(with patch: JSONValue) -> JSONValue {
        guard case .object(let changes) = patch else { return patch }
        var members = objectValue ?? []
        for (name, change) in changes {
            let index = members.firstIndex { $0.0 == name }
            if change == .null {
                if let index { members.remove(at: index) }
            } else if let index {
                members[index].1 = members[index].1.merged(with: change)
            } else {
                members.append((name, JSONValue.null.merged(with: change)))
            }
        }
        return .object(members)
    }
}
