/// The version of Osprey, as `osprey --version` prints it and the proxy's `Server` header sends it.
public enum OspreyVersion {
    /// `major.minor.patch`, following semantic versioning: the newest version CHANGELOG.md names (the one under
    /// way until it is tagged), as a test checks.
    public static let current = "0.2.0"
}
