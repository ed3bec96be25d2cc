// hurray-reader: a verifying reader of Hurray tensor files in JavaScript,
// its FlatBuffers accessors generated from schema/hurray.fbs.
//
//   import { openFile, openUrl, HurrayError } from "hurray-reader";
//   const f = openFile(bytes);          // verifies; tensors stay in `bytes`
//   f.tensor("w").data                  // a typed array over bytes.buffer
//   const r = await openUrl(url);       // at most 2 range requests
//   await r.tensor("w").read()          // one more

export { HurrayError } from "./errors.js";
export { openFile, HurrayFile } from "./file.js";
export { Tensor } from "./tensor.js";
export { openUrl, RemoteFile, type OpenUrlOptions } from "./remote.js";
export { RemoteTensor } from "./remote-tensor.js";
export type { TensorDescriptor, QuantizationDescriptor, Span } from "./header.js";
export type { TensorData } from "./data.js";
