/// The version of Osprey, as `osprey --version` prints it and the proxy's `Server` header sends it.
public enum OspreyVersion {
    /// `major.minor.patch`, following semantic versioning.
    public static let current = "0.1.0"
}
