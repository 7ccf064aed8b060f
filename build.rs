//! Compiles proto/ into Rust with protox (a pure-Rust protobuf compiler: no protoc on the build machines)
//! and tonic-prost-build, and writes the descriptor set that server reflection serves.

use prost::Message;
use std::path::PathBuf;

const PROTOS: [&str; 2] = ["proto/externalgrpc.proto", "proto/ekscale.proto"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={proto}");
    }
    let fds = protox::compile(PROTOS, ["proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
