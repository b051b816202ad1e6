// three.js's GLTFLoader reads a .glb and its AnimationMixer samples the first animation at given times.
// Prints JSON {names, times, pos: [time][joint][x, y, z], rot: [time][joint][x, y, z, w]}: the skin's joints in
// world space, in the skin's joint order.
// Usage: node three_sample.mjs NODE_MODULES_DIR FILE.glb T0 T1 ...
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, file, ...timeArgs] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(path.resolve(modules, rel)).href);
const THREE = await load("three/build/three.module.js");
const { GLTFLoader } = await load("three/examples/jsm/loaders/GLTFLoader.js");
if (typeof globalThis.ProgressEvent === "undefined") {
  // three's FileLoader reports progress with ProgressEvent, which node lacks (used for data: URIs).
  globalThis.ProgressEvent = class ProgressEvent extends Event {
    constructor(type, init = {}) { super(type); Object.assign(this, init); }
  };
}

const bytes = fs.readFileSync(file);
const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
const gltf = await new GLTFLoader().parseAsync(buffer, "");
const nodes = await gltf.parser.getDependencies("node");
const joints = gltf.parser.json.skins[0].joints.map((i) => nodes[i]);
const mixer = new THREE.AnimationMixer(gltf.scene);
const action = mixer.clipAction(gltf.animations[0]);
action.setLoop(THREE.LoopOnce, 1);
action.clampWhenFinished = true;
action.play();

const out = { names: joints.map((j) => j.name), times: [], pos: [], rot: [] };
const p = new THREE.Vector3();
const q = new THREE.Quaternion();
for (const text of timeArgs) {
  const t = Number(text);
  mixer.setTime(t);
  gltf.scene.updateMatrixWorld(true);
  out.times.push(t);
  out.pos.push(joints.map((j) => j.getWorldPosition(p).toArray()));
  out.rot.push(joints.map((j) => j.getWorldQuaternion(q).toArray()));
}
console.log(JSON.stringify(out));
