# Sourced by the scripts that run `swift build` or `swift test`. SwiftPM leaves empty
# TemporaryDirectory.* directories and lock files in $TMPDIR on every run; this points TMPDIR at a
# directory of the script's own, which the script's EXIT trap removes (swiftpm_tmpdir_remove). It
# is sticky and open to all, as /tmp is: tests run programs as other users that reach files in it.
swiftpm_tmpdir=$(mktemp -d /tmp/kcfs.XXXXXX)
chmod 1777 "$swiftpm_tmpdir"
export TMPDIR=$swiftpm_tmpdir
# --one-file-system: a mount a failed test left inside is not walked into.
swiftpm_tmpdir_remove() { rm -rf --one-file-system "$swiftpm_tmpdir"; }
