// swift-tools-version:6.0
// The code generator of Sources/TransferdClient, pinned, and built only by `make client` (in
// .build-openapi-generator): not by transferd's own builds, CI or the image.
import PackageDescription

let package = Package(
    name: "transferd-client-generator",
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator.git", exact: "1.14.3"),
    ],
    targets: []
)
