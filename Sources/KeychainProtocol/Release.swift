/// The release this build is, for `--version` of every executable.
public enum Release {
    public static let version = "0.2.0"
}
