import KeychainCrypto

/// Published test vectors, each with its source.
enum Vectors {
    static func hex(_ s: String) -> [UInt8] {
        Hex.decode(s.filter { !$0.isWhitespace })!
    }

    // RFC 5903 section 8.1 (ECDH P-256): i, g^i, r, g^r, and the x-coordinate of g^ir.
    static let p256i = hex("C88F01F510D9AC3F70A292DAA2316DE544E9AAB8AFE84049C62A9C57862D1433")
    static let p256gi = hex("""
        04 DAD0B65394221CF9B051E1FECA5787D098DFE637FC90B9EF945D0C3772581180
           5271A0461CDB8252D61F1C456FA3E59AB1F45B33ACCF5F58389E0577B8990BB3
        """)
    static let p256gr = hex("""
        04 D12DFB5289C8D4F81208B70270398C342296970A0BCCB74C736FC7554494BF63
           56FBF3CA366CC23E8157854C13C58D6AAC23F046ADA30F8353E74F33039872AB
        """)
    static let p256gir = hex("D6840F6B42F6EDAFD13116E0E12565202FEF8E9ECE7DCE03812464D04B9442DE")

    // RFC 5903 section 8.3 (ECDH P-521); i has a leading zero byte, so the padding shows.
    static let p521i = hex("""
        0037ADE9319A89F4DABDB3EF411AACCCA5123C61ACAB57B5393DCE47608172A095AA85A30FE1C2952C6771D937BA
        9777F5957B2639BAB072462F68C27A57382D4A52
        """)
    static let p521gi = hex("""
        04 0015417E84DBF28C0AD3C278713349DC7DF153C897A1891BD98BAB4357C9ECBEE1E3BF42E00B8E380AEAE57C2D1075
           64941885942AF5A7F4601723C4195D176CED3E
           017CAE20B6641D2EEB695786D8C946146239D099E18E1D5A514C739D7CB4A10AD8A788015AC405D7799DC75E7B7D
           5B6CF2261A6A7F1507438BF01BEB6CA3926F9582
        """)
    static let p521gr = hex("""
        04 00D0B3975AC4B799F5BEA16D5E13E9AF971D5E9B984C9F39728B5E5739735A219B97C356436ADC6E95BB0352F6BE
           64A6C2912D4EF2D0433CED2B6171640012D9460F
           015C68226383956E3BD066E797B623C27CE0EAC2F551A10C2C724D9852077B87220B6536C5C408A1D2AEBB8E86D6
           78AE49CB57091F4732296579AB44FCD17F0FC56A
        """)
    static let p521gir = hex("""
        01144C7D79AE6956BC8EDB8E7C787C4521CB086FA64407F97894E5E6B2D79B04D1427E73CA4BAA240A34786859810C
        06B3C715A3A8CC3151F2BEE417996D19F3DDEA
        """)

    // RFC 6979 appendix A.2.5 (ECDSA P-256): the key, and the signatures of "sample".
    static let rfc6979Public = hex("""
        04 60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6
           7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299
        """)
    static let rfc6979Private = hex("C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721")
    static let sampleSHA256 = (r: hex("EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716"),
                               s: hex("F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"))
    static let sampleSHA384 = (r: hex("0EAFEA039B20E9B42309FB1D89E213057CBF973DC0CFC8F129EDDDC800EF7719"),
                               s: hex("4861F0491E6998B9455193E34E7B0D284DDD7149A74B95B9261F13ABDE940954"))

    /// The DER `ECDSA-Sig-Value` of (r, s), as X9.62 and Apple's `…X962…` algorithms use.
    static func derSignature(r: [UInt8], s: [UInt8]) -> [UInt8] {
        func integer(_ v: [UInt8]) -> [UInt8] {
            var body = Array(v.drop { $0 == 0 })
            if body.first.map({ $0 & 0x80 != 0 }) ?? true { body.insert(0, at: 0) }
            return [0x02, UInt8(body.count)] + body
        }
        let content = integer(r) + integer(s)
        return [0x30, UInt8(content.count)] + content
    }

    // ANSI X9.63 KDF, SHA-256, no SharedInfo: NIST CAVP component test (ansx963_2001.rsp), COUNT 0 and 1.
    static let x963 = [
        (z: hex("96c05619d56c328ab95fe84b18264b08725b85e33fd34f08"), out: hex("443024c3dae66b95e6f5670601558f71")),
        (z: hex("96f600b73ad6ac5629577eced51743dd2c24c21b1ac83ee4"), out: hex("b6295162a7804f5667ba9070f82fa522")),
    ]

    // RSA Laboratories PKCS #1 v2.1 vectors (pkcs-1v2-1-vec: pkcs1v15sign-vectors.txt,
    // pss-vect.txt, oaep-vect.txt, pkcs1v15crypt-vectors.txt), Examples 1.x, 1024-bit keys, as
    // carried with their PKCS #8 wrapping in Mozilla's WebCrypto test vectors. `pkcs1` strips
    // the 26-byte PKCS #8 header (version, rsaEncryption AlgorithmIdentifier, OCTET STRING).
    static func pkcs1(fromPKCS8 der: [UInt8]) -> [UInt8] { Array(der.dropFirst(26)) }

    /// Key A (modulus a56e4a0e…): PKCS1v15 and PSS signature examples.
    static let keyAPKCS8 = hex("""
        30820275020100300d06092a864886f70d01010105000482025f3082025b0201
        0002818100a56e4a0e701017589a5187dc7ea841d156f2ec0e36ad52a44dfeb1
        e61f7ad991d8c51056ffedb162b4c0f283a12a88a394dff526ab7291cbb307ce
        abfce0b1dfd5cd9508096d5b2b8b6df5d671ef6377c0921cb23c270a70e2598e
        6ff89d19f105acc2d3f0cb35f29280e1386b6f64c4ef22e1e1f20d0ce8cffb22
        49bd9a2137020301000102818033a5042a90b27d4f5451ca9bbbd0b44771a101
        af884340aef9885f2a4bbe92e894a724ac3c568c8f97853ad07c0266c8c6a3ca
        0929f1e8f11231884429fc4d9ae55fee896a10ce707c3ed7e734e44727a39574
        501a532683109c2abacaba283c31b4bd2f53c3ee37e352cee34f9e503bd80c06
        22ad79c6dcee883547c6a3b325024100e7e8942720a877517273a356053ea2a1
        bc0c94aa72d55c6e86296b2dfc967948c0a72cbccca7eacb35706e09a1df55a1
        535bd9b3cc34160b3b6dcd3eda8e6443024100b69dca1cf7d4d7ec81e75b90fc
        ca874abcde123fd2700180aa90479b6e48de8d67ed24f9f19d85ba275874f542
        cd20dc723e6963364a1f9425452b269a6799fd024028fa13938655be1f8a159c
        baca5a72ea190c30089e19cd274a556f36c4f6e19f554b34c077790427bbdd8d
        d3ede2448328f385d81b30e8e43b2fffa02786197902401a8b38f398fa712049
        898d7fb79ee0a77668791299cdfa09efc0e507acb21ed74301ef5bfd48be455e
        aeb6e1678255827580a8e4e8e14151d1510a82a3f2e729024027156aba4126d2
        4a81f3a528cbfb27f56886f840a9f6e86e17a44b94fe9319584b8e22fdde1e5a
        2e3bd8aa5ba8d8584194eb2190acf832b847f13a3d24a79f4d
        """)
    /// pkcs1v15sign-vectors.txt Example 1.3: the message and its SHA-1 signature.
    static let pkcs1v15Message = hex("""
        a4b159941761c40c6a82f2b80d1b94f5aa2654fd17e12d588864679b54cd04ef
        8bd03012be8dc37f4b83af7963faff0dfa225477437c48017ff2be8191cf3955
        fc07356eab3f322f7f620e21d254e5db4324279fe067e0910e2e81ca2cab31c7
        45e67a54058eb50d993cdb9ed0b4d029c06d21a94ca661c3ce27fae1d6cb20f4
        564d66ce4767583d0e5f060215b59017be85ea848939127bd8c9c4d47b51056c
        031cf336f17c9980f3b8f5b9b6878e8b797aa43b882684333e17893fe9caa6aa
        299f7ed1a18ee2c54864b7b2b99b72618fb02574d139ef50f019c9eef4169713
        38e7d470
        """)
    static let pkcs1v15SignatureSHA1 = hex("""
        0b1f2e5180e5c7b4b5e672929f664c4896e50c35134b6de4d5a934252a3a245f
        f48340920e1034b7d5a5b524eb0e1cf12befef49b27b732d2c19e1c43217d6e1
        417381111a1d36de6375cf455b3c9812639dbc27600c751994fb61799ecf7da6
        bcf51540afd0174db4033188556675b1d763360af46feeca5b60f882829ee7b2
        """)
    /// pss-vect.txt Example 1.1: SHA-1, MGF1-SHA-1, 20-byte salt (Apple's `…PSSSHA1`).
    static let pssMessage = hex("""
        cdc87da223d786df3b45e0bbbc721326d1ee2af806cc315475cc6f0d9c66e1b6
        2371d45ce2392e1ac92844c310102f156a0d8d52c1f4c40ba3aa65095786cb76
        9757a6563ba958fed0bcc984e8b517a3d5f515b23b8a41e74aa867693f90dfb0
        61a6e86dfaaee64472c00e5f20945729cbebe77f06ce78e08f4098fba41f9d61
        93c0317e8b60d4b6084acb42d29e3808a3bc372d85e331170fcbf7cc72d0b71c
        296648b3a4d10f416295d0807aa625cab2744fd9ea8fd223c42537029828bd16
        be02546f130fd2e33b936d2676e08aed1b73318b750a0167d0
        """)
    static let pssSignatureSHA1 = hex("""
        9074308fb598e9701b2294388e52f971faac2b60a5145af185df5287b5ed2887
        e57ce7fd44dc8634e407c8e0e4360bc226f3ec227f9d9e54638e8d31f5051215
        df6ebb9c2f9579aa77598a38f914b5b9c1bd83c4e2f9f382a0d0aa3542ffee65
        984a601bc69eb28deb27dca12c82c2d4c3f66cd500f1ff2b994d8a4e30cbb33c
        """)

    /// Key B (modulus a8b3b284…): OAEP and PKCS1v15 encryption examples.
    static let keyBPKCS8 = hex("""
        30820276020100300d06092a864886f70d0101010500048202603082025c0201
        0002818100a8b3b284af8eb50b387034a860f146c4919f318763cd6c5598c8ae
        4811a1e0abc4c7e0b082d693a5e7fced675cf4668512772c0cbc64a742c6c630
        f533c8cc72f62ae833c40bf25842e984bb78bdbf97c0107d55bdb662f5c4e0fa
        b9845cb5148ef7392dd3aaff93ae1e6b667bb3d4247616d4f5ba10d4cfd226de
        88d39f16fb020301000102818053339cfdb79fc8466a655c7316aca85c55fd8f
        6dd898fdaf119517ef4f52e8fd8e258df93fee180fa0e4ab29693cd83b152a55
        3d4ac4d1812b8b9fa5af0e7f55fe7304df41570926f3311f15c4d65a732c4831
        16ee3d3d2d0af3549ad9bf7cbfb78ad884f84d5beb04724dc7369b31def37d0c
        f539e9cfcdd3de653729ead5d1024100d32737e7267ffe1341b2d5c0d150a81b
        586fb3132bed2f8d5262864a9cb9f30af38be448598d413a172efb802c21acf1
        c11c520c2f26a471dcad212eac7ca39d024100cc8853d1d54da630fac004f471
        f281c7b8982d8224a490edbeb33d3e3d5cc93c4765703d1dd791642f1f116a0d
        d852be2419b2af72bfe9a030e860b0288b5d7702400e12bf1718e9cef5599ba1
        c3882fe8046a90874eefce8f2ccc20e4f2741fb0a33a3848aec9c9305fbecbd2
        d76819967d4671acc6431e4037968db37878e695c102410095297b0f95a2fa67
        d00707d609dfd4fc05c89dafc2ef6d6ea55bec771ea333734d9251e79082ecda
        866efef13c459e1a631386b7e354c899f5f112ca85d7158302404f456c502493
        bdc0ed2ab756a3a6ed4d67352a697d4216e93212b127a63d5411ce6fa98d5dbe
        fd73263e3728142743818166ed7dd63687dd2a8ca1d2f4fbd8e1
        """)
    /// oaep-vect.txt Example 1.1 (SHA-1): the message and its ciphertext.
    static let oaepMessage = hex("6628194e12073db03ba94cda9ef9532397d50dba79b987004afefe34")
    static let oaepCiphertext = hex("""
        354fe67b4a126d5d35fe36c777791a3f7ba13def484e2d3908aff722fad468fb
        21696de95d0be911c2d3174f8afcc201035f7b6d8e69402de5451618c21a535f
        a9d7bfc5b8dd9fc243f8cf927db31322d6e881eaa91a996170e657a05a266426
        d98c88003f8477c1227094a0d9fa1e8c4024309ce1ecccb5210035d47ac72e8a
        """)
    /// pkcs1v15crypt-vectors.txt Example 1.3: the message and its ciphertext.
    static let pkcs1v15CryptMessage = hex("""
        d94ae0832e6445ce42331cb06d531a82b1db4baad30f746dc916df24d4e3c245
        1fff59a6423eb0e1d02d4fe646cf699dfd818c6e97b051
        """)
    static let pkcs1v15CryptCiphertext = hex("""
        709c7d2d4598c96065b6588da2f89fa87f062d7241ef6595898f637ada57eae9
        0173f0fb4bf6a91ebd96506907c853dacf208494be94d313a04185d474a90741
        2effc3e024d07e4d09aa245fbcb130219bfa5de02d4f7e2ec9e62e8ad32dee5f
        f4d8e4cfecbc5033a1c2c61c5233ae16192a481d0075bfc7ce028212cd27bebe
        """)
}
