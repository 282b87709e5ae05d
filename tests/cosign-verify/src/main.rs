//! `cosign verify --key KEY.pub --insecure-ignore-tlog` for hcpx's interop test, built on sigstore-rs's port of
//! cosign's verification (the sigstore project's Rust library): it resolves the image at the registry, reads the
//! `sha256-<hex>.sig` signature image, keeps only the simple-signing layers whose payload names that digest, and
//! accepts when one of them is signed by the key. hcpx's own code is not used, so what passes here is the
//! ecosystem's format. Usage: `cosign-verify --key KEY.pub [--allow-http-registry] HOST/REPO(:TAG|@DIGEST)`.
//! Prints the verified payloads as JSON (as cosign does) and exits 0, or says why on stderr and exits 1.

use sigstore::cosign::verification_constraint::{PublicKeyVerifier, VerificationConstraintVec};
use sigstore::cosign::{ClientBuilder, CosignCapabilities as _};
use sigstore::crypto::SigningScheme;
use sigstore::registry::{Auth, ClientConfig, ClientProtocol, OciReference};

struct Args {
    key: String,
    allow_http: bool,
    image: String,
}

fn args() -> Result<Args, String> {
    let mut key = None;
    let mut allow_http = false;
    let mut image = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--key" => key = it.next(),
            "--allow-http-registry" => allow_http = true,
            _ if image.is_none() && !a.starts_with('-') => image = Some(a),
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    match (key, image) {
        (Some(key), Some(image)) => Ok(Args { key, allow_http, image }),
        _ => Err("usage: cosign-verify --key KEY.pub [--allow-http-registry] IMAGE".into()),
    }
}

async fn verify(a: &Args) -> Result<String, String> {
    let pem = std::fs::read(&a.key).map_err(|e| format!("{}: {e}", a.key))?;
    let image: OciReference = a.image.parse().map_err(|e| format!("{}: {e}", a.image))?;
    let config = ClientConfig {
        protocol: if a.allow_http { ClientProtocol::Http } else { ClientProtocol::Https },
        ..Default::default()
    };
    let mut client =
        ClientBuilder::default().with_oci_client_config(config).build().map_err(|e| e.to_string())?;
    let auth = Auth::Anonymous;
    let (_, digest) =
        client.triangulate(&image, &auth).await.map_err(|e| format!("resolving {}: {e}", a.image))?;
    // Only the layers whose payload names `digest` (sigstore-rs skips the others, as cosign does).
    let layers = client.trusted_signature_layers(&auth, &image).await.map_err(|e| e.to_string())?;
    let verifier =
        PublicKeyVerifier::new(&pem, &SigningScheme::default()).map_err(|e| format!("{}: {e}", a.key))?;
    let constraints: VerificationConstraintVec = vec![Box::new(verifier)];
    sigstore::cosign::verify_constraints(&layers, constraints.iter()).map_err(|_| {
        format!(
            "no signature of {} ({digest}) verifies with {} ({} signature layer(s) name that digest)",
            a.image,
            a.key,
            layers.len()
        )
    })?;
    let verified: Vec<_> = layers.iter().map(|l| &l.simple_signing).collect();
    serde_json::to_string(&verified).map_err(|e| e.to_string())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let result = match args() {
        Ok(a) => verify(&a).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(json) => println!("{json}"),
        Err(e) => {
            eprintln!("cosign-verify: {e}");
            std::process::exit(1);
        }
    }
}
