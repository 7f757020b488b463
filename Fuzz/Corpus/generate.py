#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus: small valid inputs in each decoder's format.

Run from anywhere: python3 Fuzz/Corpus/generate.py. Formats are those of
Sources/KeychainCore/ItemCodec.swift (AttributeCoding), Sources/KeychainProtocol/Messages.swift,
Sources/KeychainCore/VaultHeader.swift and docs/filesystem.md. Files named valid-* must decode;
Tests/KeychainCoreTests/FuzzRegressionTests.swift checks that they do.
"""
import os
import sqlite3
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def record(attrs):
    """AttributeCoding: u16 count, then sorted entries of u8 name length, name, u8 tag, value."""
    out = struct.pack(">H", len(attrs))
    for name in sorted(attrs):
        value = attrs[name]
        key = name.encode()
        out += struct.pack(">B", len(key)) + key
        if isinstance(value, bool):
            out += struct.pack(">BB", 4, 1 if value else 0)
        elif isinstance(value, int):
            out += struct.pack(">Bq", 3, value)
        elif isinstance(value, float):
            out += struct.pack(">Bd", 5, value)
        elif isinstance(value, bytes):
            out += struct.pack(">BI", 2, len(value)) + value
        else:
            data = value.encode()
            out += struct.pack(">BI", 1, len(data)) + data
    return out


def request(op, query={}, changes={}, options={}, secrets=()):
    out = struct.pack(">HB", 1, op) + record(query) + record(changes) + record(options)
    out += struct.pack(">B", len(secrets))
    for s in secrets:
        out += struct.pack(">I", len(s)) + s
    return out


def response(status, shape, values, info={}):
    out = struct.pack(">HiBI", 1, status, shape, len(values))
    for kind, attrs, secret, ref in values:
        out += struct.pack(">B", kind) + record(attrs)
        out += struct.pack(">BI", 1, len(secret)) + secret if secret is not None else b"\x00"
        out += struct.pack(">BI", 1, len(ref)) + ref if ref is not None else b"\x00"
    return out + record(info)


def frame(payload):
    return struct.pack(">I", len(payload)) + payload


def header(keys, passphrase=True):
    """VaultHeader.encoded(): magic, format, flags, KDF, salt, vault ID, device key ID, keys."""
    out = b"KCFSVLT\x00" + struct.pack(">HHBQQ", 1, 1 if passphrase else 0, 1, 2, 67108864)
    out += bytes(range(16)) + bytes(range(16, 32)) + bytes(range(32, 48))
    out += struct.pack(">B", len(keys))
    for slot, wrapper, box in keys:
        out += struct.pack(">BBH", slot, wrapper, len(box)) + box
    return out


def write(target, name, data):
    os.makedirs(os.path.join(HERE, target), exist_ok=True)
    with open(os.path.join(HERE, target, name), "wb") as f:
        f.write(data)


SEARCH, UPDATE, DELETE = 0, 1, 2
REF = b"genp" + bytes(range(16))

write("FuzzQuery", "valid-search-genp", bytes([SEARCH]) + record(
    {"class": "genp", "svce": "db", "acct": "app", "r_Data": True, "m_Limit": "m_LimitOne"}))
write("FuzzQuery", "valid-search-inet-all", bytes([SEARCH]) + record(
    {"class": "inet", "srvr": "example.com", "port": 443, "ptcl": "htps", "sync": "syna",
     "r_Attributes": 1, "r_PersistentRef": True, "m_Limit": "m_LimitAll", "pdmn": "ak"}))
write("FuzzQuery", "valid-update-keys", bytes([UPDATE]) + record(
    {"class": "keys", "atag": b"\x01\x02", "bsiz": 256, "sign": True, "sdat": 700000000.0}))
write("FuzzQuery", "valid-delete-ref", bytes([DELETE]) + record(
    {"v_PersistentRef": REF, "agrp": "team", "m_Limit": 5, "u_AuthUI": "u_AuthUIFail"}))
write("FuzzQuery", "invalid-search-unknown-class", bytes([SEARCH]) + record({"class": "nope"}))

write("FuzzMessages", "valid-ping", frame(request(1)))
write("FuzzMessages", "valid-add-with-secret", frame(request(
    5, query={"class": "genp", "svce": "db", "acct": "app", "pdmn": "ck"}, secrets=[b"s3cret"])))
write("FuzzMessages", "valid-copy-then-update", frame(request(
    6, query={"class": "genp", "svce": "db", "r_Data": True, "m_Limit": "m_LimitAll"}))
    + frame(request(7, query={"class": "genp", "svce": "db"}, changes={"labl": "new"},
                    options={"approved": REF})))


def lookup(class_code, returns, values, group=None):
    """A lookup (26): class code, return flags, the primary key's values in order, the group."""
    out = struct.pack(">HBBBB", 1, 26, class_code, returns, len(values))
    for value in values:
        out += record({"x": value})[4:]  # an entry's tag and value, without its count and name
    if group is None:
        return out + b"\x00"
    return out + struct.pack(">BI", 1, len(group)) + group.encode()


write("FuzzMessages", "valid-lookups", frame(lookup(1, 1, ["app", "db"]))
      + frame(lookup(2, 7, ["a", "", "example.com", "htps", "dflt", 443, "/"], group="team")))
write("FuzzMessages", "valid-response-items", frame(response(0, 2, [
    (3, {"svce": "db", "acct": "app", "cdat": 700000000.0}, b"s3cret", REF),
    (1, {}, b"data", None), (2, {}, None, REF)], info={"locked": False})))
write("FuzzMessages", "valid-response-error", frame(response(-25300, 0, [])))

write("FuzzFileNames", "plain", b"db")
write("FuzzFileNames", "escapes", b"a/b%c\x00d")
write("FuzzFileNames", "dotdot", b"..")
write("FuzzFileNames", "hidden", b".config")
write("FuzzFileNames", "escaped-name", b"%2Econfig%25%2F")
write("FuzzFileNames", "long", b"x" * 300)

box = bytes(72)
write("FuzzVaultHeader", "valid-minimal", header([]))
write("FuzzVaultHeader", "valid-keys", header(
    [(1, 1, box), (2, 3, box), (3, 2, box), (0x10, 1, bytes(80))], passphrase=True))
write("FuzzVaultHeader", "valid-no-passphrase", header([(3, 2, box), (6, 2, box)], passphrase=False))
fixture = os.path.join(ROOT, "Tests/KeychainCoreTests/Fixtures/vault-v1/fixture.vault")
with sqlite3.connect(f"file:{fixture}?mode=ro", uri=True) as db:
    (blob,) = db.execute("select value from meta where key = 'header'").fetchone()
write("FuzzVaultHeader", "valid-fixture-v1", bytes(blob))


def lp(data):
    """A 4-byte big-endian length, then the bytes (SealedKey's and TokenKey's fields)."""
    return struct.pack(">I", len(data)) + data


def tpm2b(body):
    """A TPM2B: u16 size, then the bytes, as Tss2_MU_TPM2B_*_Marshal writes them."""
    return struct.pack(">H", len(body)) + body


def sealed(mask, primary, recovery=(b"", b""), root_name=None):
    """docs/tpm.md, "The sealed device key file": magic, format (1, or 2 with the storage root
    key's name), PCR mask, four areas, the name."""
    body = b"".join(lp(a) for a in primary + recovery)
    if root_name is None:
        return b"KCFSTPM\x00" + struct.pack(">HI", 1, mask) + body
    return b"KCFSTPM\x00" + struct.pack(">HI", 2, mask) + body + lp(root_name)


# Shapes of the TPM's own areas: TPMT_PUBLIC of a keyedhash (0x0008) or ECC (0x0023) object with
# SHA-256 names (0x000b), and a TPM2B_PRIVATE (integrity HMAC, then the encrypted sensitive area).
keyedhash_public = tpm2b(struct.pack(">HHI", 0x0008, 0x000B, 0x00000012) + tpm2b(bytes(32)) + struct.pack(">H", 0x0010)
                         + tpm2b(bytes(range(32))))
ecc_public = tpm2b(struct.pack(">HHI", 0x0023, 0x000B, 0x00060072) + tpm2b(b"") + struct.pack(">HHHH", 0x0010, 0x0010, 0x0003, 0x0010)
                   + tpm2b(bytes(range(32))) + tpm2b(bytes(range(32, 64))))
private = tpm2b(tpm2b(bytes(range(0x40, 0x60))) + bytes(range(0x60, 0xC0)))
write("FuzzSealedKey", "valid-no-pcrs", sealed(0, (keyedhash_public, private)))
write("FuzzSealedKey", "valid-pcr7-recovery", sealed(1 << 7, (keyedhash_public, private), (keyedhash_public, private)))
write("FuzzSealedKey", "valid-pcrs-0-2-7", sealed(0b10000101, (keyedhash_public, private), (keyedhash_public, private)))
write("FuzzSealedKey", "valid-token-key", b"KCFSTPK\x00" + struct.pack(">H", 1) + lp(ecc_public) + lp(private)
      + lp(b"\x04" + bytes(range(32)) + bytes(range(32, 64))))
write("FuzzSealedKey", "valid-token-key-named", b"KCFSTPK\x00" + struct.pack(">H", 2) + lp(ecc_public) + lp(private)
      + lp(b"\x04" + bytes(range(32)) + bytes(range(32, 64))) + lp(struct.pack(">H", 0x000B) + bytes(range(0xA0, 0xC0))))
write("FuzzSealedKey", "invalid-lone-recovery-private", sealed(0, (keyedhash_public, private), (b"", private)))
write("FuzzSealedKey", "invalid-pcr-24", sealed(1 << 24, (keyedhash_public, private)))
root_name = struct.pack(">H", 0x000B) + bytes(range(0xA0, 0xC0))
write("FuzzSealedKey", "valid-named-no-pcrs", sealed(0, (keyedhash_public, private), root_name=root_name))
write("FuzzSealedKey", "valid-named-pcr7-recovery", sealed(1 << 7, (keyedhash_public, private), (keyedhash_public, private),
                                                            root_name=root_name))
write("FuzzSealedKey", "invalid-format-3", sealed(0, (keyedhash_public, private)).replace(b"\x00\x01", b"\x00\x03", 1))
write("FuzzSealedKey", "invalid-format-2-unnamed", sealed(0, (keyedhash_public, private)).replace(b"\x00\x01", b"\x00\x02", 1))
write("FuzzSealedKey", "invalid-empty-name", sealed(0, (keyedhash_public, private), root_name=b""))

# FuzzAgentMessages: OpenSSH agent frames (draft-miller-ssh-agent), a uint32 length first.
def ssh_string(b):
    return struct.pack(">I", len(b)) + b


def agent_frame(payload):
    return struct.pack(">I", len(payload)) + payload


P256_G = bytes.fromhex("04" "6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296"
                       "4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5")
P256_BLOB = ssh_string(b"ecdsa-sha2-nistp256") + ssh_string(b"nistp256") + ssh_string(P256_G)
write("FuzzAgentMessages", "valid-request-identities", agent_frame(b"\x0b"))
write("FuzzAgentMessages", "valid-sign-ecdsa",
      agent_frame(b"\x0d" + ssh_string(P256_BLOB) + ssh_string(b"session data") + struct.pack(">I", 0)))
write("FuzzAgentMessages", "valid-add-ecdsa",
      agent_frame(b"\x11" + ssh_string(b"ecdsa-sha2-nistp256") + ssh_string(b"nistp256") + ssh_string(P256_G)
                  + ssh_string(b"\x01") + ssh_string(b"comment")))
write("FuzzAgentMessages", "valid-add-ed25519-constrained",
      agent_frame(b"\x19" + ssh_string(b"ssh-ed25519") + ssh_string(bytes(range(32))) + ssh_string(bytes(32) + bytes(range(32)))
                  + ssh_string(b"k") + b"\x01" + struct.pack(">I", 60) + b"\x02"))
write("FuzzAgentMessages", "valid-lock", agent_frame(b"\x16" + ssh_string(b"passphrase")))
write("FuzzAgentMessages", "valid-remove-all", agent_frame(b"\x13"))
write("FuzzAgentMessages", "valid-extension", agent_frame(b"\x1b" + ssh_string(b"query")))
ED25519_BLOB = ssh_string(b"ssh-ed25519") + ssh_string(bytes(range(32)))
write("FuzzAgentMessages", "valid-session-bind",
      agent_frame(b"\x1b" + ssh_string(b"session-bind@openssh.com") + ssh_string(ED25519_BLOB) + ssh_string(bytes(32))
                  + ssh_string(ssh_string(b"ssh-ed25519") + ssh_string(bytes(64))) + b"\x00"))
HOP_TO = ssh_string(b"") + ssh_string(b"host") + ssh_string(b"") + ssh_string(ED25519_BLOB) + b"\x00"
HOP_FROM = ssh_string(b"") + ssh_string(b"") + ssh_string(b"")
write("FuzzAgentMessages", "valid-add-ed25519-restricted",
      agent_frame(b"\x19" + ssh_string(b"ssh-ed25519") + ssh_string(bytes(range(32))) + ssh_string(bytes(32) + bytes(range(32)))
                  + ssh_string(b"k") + b"\xff" + ssh_string(b"restrict-destination-v00@openssh.com")
                  + ssh_string(ssh_string(ssh_string(HOP_FROM) + ssh_string(HOP_TO) + ssh_string(b""))) + b"\x02"))
