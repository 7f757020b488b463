import KeychainProtocol

/// The manual pages, written from the text `help` prints (`Verb`, `Help`), so a page cannot say
/// what `help` does not: `keychainfs help --man [PAGE]` prints one as roff (scripts/package.sh
/// installs them; ManPageTests compares each with `help`).
enum ManPage {
    /// Every page, by the name `man` finds it under.
    static let names = ["keychainfs", "keychainfs-daemon", "mount.fuse.keychainfs", "git-credential-keychainfs",
                        "docker-credential-keychainfs"]

    /// The roff text of the page `name`, nil for a page that is not one of `names`.
    static func render(_ name: String) -> String? {
        switch name {
        case "keychainfs": return keychainfs
        case "keychainfs-daemon": return daemon
        case "mount.fuse.keychainfs": return mountHelper
        case "git-credential-keychainfs": return gitHelper
        case "docker-credential-keychainfs": return dockerHelper
        default: return nil
        }
    }

    // MARK: the pages

    static var keychainfs: String {
        var page = header("keychainfs", section: 1, what: "keep secrets in an encrypted vault served by a daemon")
        page += ".SH SYNOPSIS\n" + synopsis(["keychainfs COMMAND [OPTIONS] [VAULT]", "keychainfs help [COMMAND]",
                                               "keychainfs --version", "keychainfs VAULT MOUNTPOINT [-o OPTIONS]"])
        page += ".SH DESCRIPTION\n" + text(Help.introduction)
        page += ".SH COMMANDS\n"
        for verb in Verb.all {
            page += ".TP\n\\fB\(escape(verb.name))\\fR " + line(verb.usage) + text(verb.summary)
            if !verb.details.isEmpty { page += ".sp\n" + text(verb.details) }
        }
        page += exitStatus + environment
        page += ".SH FILES\n" + text(Help.files)
        page += seeAlso(["keychainfs-daemon(8)", "mount.fuse.keychainfs(8)", "git-credential-keychainfs(1)",
                         "docker-credential-keychainfs(1)", "security(1)"])
        return page
    }

    static var daemon: String {
        let verb = VaultVerbs.daemon
        var page = header("keychainfs-daemon", section: 8, what: "the keychainfs daemon of one vault, and the commands that need the vault in-process")
        page += ".SH SYNOPSIS\n" + synopsis(["keychainfs-daemon \(verb.name) \(verb.usage)", "keychainfs-daemon COMMAND [OPTIONS] [VAULT]"])
        page += ".SH DESCRIPTION\n" + text(verb.summary) + text(Help.daemonDescription)
        page += ".SH SIGNALS\n" + text(Help.daemonSignals)
        page += exitStatus + environment
        page += ".SH FILES\n" + text(Help.files)
        page += seeAlso(["keychainfs(1)", "mount.fuse.keychainfs(8)", "systemd.service(5)"])
        return page
    }

    static var mountHelper: String {
        let verb = MountVerbs.mount
        var page = header("mount.fuse.keychainfs", section: 8, what: "mount a keychainfs vault with mount(8) or /etc/fstab")
        page += ".SH SYNOPSIS\n" + synopsis(["mount.fuse.keychainfs VAULT MOUNTPOINT [-o OPTIONS]",
                                               "mount -t fuse.keychainfs VAULT MOUNTPOINT [-o OPTIONS]"])
        page += ".SH DESCRIPTION\n" + text(Help.mountHelperDescription)
        page += ".SH OPTIONS\n" + text(verb.summary) + text(verb.details)
        page += exitStatus + environment
        page += seeAlso(["keychainfs(1)", "keychainfs-daemon(8)", "mount(8)", "fstab(5)", "fuse(8)"])
        return page
    }

    static var gitHelper: String {
        var page = header("git-credential-keychainfs", section: 1, what: "git's credential helper over the keychainfs vault")
        page += ".SH SYNOPSIS\n" + synopsis(["git config --global credential.helper keychainfs",
                                               "git-credential-keychainfs get|store|erase"])
        page += ".SH DESCRIPTION\n" + text(Help.gitHelperDescription)
        page += ".SH EXIT STATUS\n" + text(Help.helperExitStatus)
        page += helperEnvironment
        page += seeAlso(["keychainfs(1)", "gitcredentials(7)", "git-credential(1)"])
        return page
    }

    static var dockerHelper: String {
        var page = header("docker-credential-keychainfs", section: 1, what: "docker's credential helper over the keychainfs vault")
        page += ".SH SYNOPSIS\n" + synopsis(["docker-credential-keychainfs store|get|erase|list|version"])
        page += ".SH DESCRIPTION\n" + text(Help.dockerHelperDescription)
        page += ".SH EXIT STATUS\n" + text(Help.helperExitStatus)
        page += helperEnvironment
        page += seeAlso(["keychainfs(1)", "git-credential-keychainfs(1)"])
        return page
    }

    // MARK: sections several pages share

    static var exitStatus: String { ".SH EXIT STATUS\n" + text(Help.exitStatus) }

    static var environment: String {
        ".SH ENVIRONMENT\n" + Help.environment.map(variable).joined()
    }

    static var helperEnvironment: String {
        ".SH ENVIRONMENT\n" + Help.environment.filter { Help.helperVariables.contains($0.name) }
            .map(variable).joined()
    }

    static func variable(_ v: (name: String, meaning: String)) -> String {
        ".TP\n.B " + line(v.name) + text(v.meaning)
    }

    // MARK: roff

    /// `.TH` and NAME. No date: the page is the same for the same text.
    static func header(_ name: String, section: Int, what: String) -> String {
        """
        .\\" Generated by `keychainfs help --man \(name)` from the text of `keychainfs help`: do not edit.
        .TH \(escape(name).uppercased()) \(section) "" "keychainfs \(Release.version)" "keychainfs"
        .nh
        .ad l
        .SH NAME
        \(escape(name)) \\- \(escape(what))

        """
    }

    /// Each form on its line, the command in bold.
    static func synopsis(_ forms: [String]) -> String {
        forms.map { form in
            let words = form.split(separator: " ", maxSplits: 1)
            return "\\fB\(escape(String(words[0])))\\fR" + (words.count > 1 ? " " + line(String(words[1])) : "\n")
        }.joined(separator: ".br\n")
    }

    static func seeAlso(_ pages: [String]) -> String {
        ".SH SEE ALSO\n" + line(pages.joined(separator: ", "))
    }

    /// Text as `help` wraps it: each line an input line, so prose fills; a line that starts with
    /// a space (an example, a row of a table) stands on its own line with its indent, as in
    /// `help`; a blank line is a vertical space.
    static func text(_ text: String) -> String {
        var out = "", afterIndented = false
        for l in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let indented = l.first == " "
            if l.isEmpty {
                out += ".sp\n"
            } else {
                if afterIndented && !indented { out += ".br\n" }
                out += line(String(l))
            }
            afterIndented = indented
        }
        return out
    }

    static func line(_ text: String) -> String { escape(text) + "\n" }

    /// One input line: backslashes and minus signs escaped, a leading control character made text.
    static func escape(_ text: String) -> String {
        var out = ""
        for ch in text {
            switch ch {
            case "\\": out += "\\e"
            case "-": out += "\\-"
            default: out.append(ch)
            }
        }
        return out.hasPrefix(".") || out.hasPrefix("'") ? "\\&" + out : out
    }
}
