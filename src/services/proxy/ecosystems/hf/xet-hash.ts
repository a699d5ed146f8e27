// The Xet file hash (what X-Xet-Hash and the Xet bridge's object URLs name), computed as a body
// streams past: content-defined chunks hashed under Xet's data key (Hugging Face's own
// implementation, @huggingface/xetchunk-wasm), aggregated into Xet's merkle tree as chunks come,
// then keyed with the zero key (xet-core's merklehash::file_hash). The tree is built level by level
// with one open group per level, so memory stays O(log n) whatever the file's size.
import { type Chunk, createChunker, finalize, hashToHex, hmac, nextBlock } from '@huggingface/xetchunk-wasm';

// xet-core's key for internal tree nodes (merklehash, aggregated_node_hash).
const NODE_KEY = new Uint8Array([
  1, 126, 197, 199, 165, 71, 41, 150, 253, 148, 102, 102, 180, 138, 2, 230, 93, 221, 83, 111, 55, 199, 109,
  210, 248, 99, 82, 230, 74, 83, 113, 63,
]);
const ZERO_KEY = new Uint8Array(32);
/** A group closes after 2 * 4 children, or at a natural cut (hash mod 4 = 0) once it has two. */
const MEAN_CHILDREN = 4;

/** One node made of a group: its children as "<hex> : <size>\n" lines, hashed under NODE_KEY. */
function merged(group: readonly Chunk[]): Chunk {
  let text = '';
  let length = 0;
  for (const c of group) {
    text += `${hashToHex(c.hash)} : ${c.length}\n`;
    length += c.length;
  }
  return { hash: hmac(Buffer.from(text, 'latin1'), NODE_KEY), length };
}

/** One tree level: its open group, the last node seen (held back: is it the level's last?). */
interface Level {
  group: Chunk[];
  children: number;
  pending: Chunk | null;
  count: number;
}

/**
 * The aggregation of xet-core (and @huggingface/xetchunk-wasm's xorbHash), node by node: a node
 * ends its group when it is the level's last, when the group already has 2 * MEAN_CHILDREN
 * children before it, or when the group has two and the node's hash is a natural cut.
 */
export class XetTree {
  private levels: Level[] = [];

  add(node: Chunk, at = 0): void {
    let l = this.levels[at];
    if (!l) {
      l = { group: [], children: 0, pending: null, count: 0 };
      this.levels[at] = l;
    }
    l.count++;
    if (l.pending) this.place(l.pending, at, false);
    l.pending = node;
  }

  private place(node: Chunk, at: number, last: boolean): void {
    const l = this.levels[at]!;
    l.group.push(node);
    const cut =
      last ||
      l.children === 2 * MEAN_CHILDREN ||
      (l.children >= 2 && (node.hash[24] ?? 0) % MEAN_CHILDREN === 0);
    if (!cut) {
      l.children++;
      return;
    }
    const group = l.group;
    l.group = [];
    l.children = 0;
    this.add(merged(group), at + 1);
  }

  /** The root hash (all zeros for no chunks). */
  root(): Uint8Array {
    for (let at = 0; ; at++) {
      const l = this.levels[at];
      if (!l || l.count === 0) return new Uint8Array(32);
      if (l.count === 1 && l.group.length === 0) return l.pending!.hash;
      this.place(l.pending!, at, true);
      l.pending = null;
    }
  }
}

/** Hashes a body given in pieces of any size; `hex()` once it is all in. */
export class XetFileHash {
  private chunker = createChunker();
  private tree = new XetTree();
  private chunks = 0;

  update(data: Uint8Array): void {
    for (const c of nextBlock(this.chunker, data)) this.push(c);
  }

  /** The file hash in Xet's hex form (xet-core prints each 64-bit word little-endian). */
  hex(): string {
    const last = finalize(this.chunker);
    if (last) this.push(last);
    // An empty file's hash is all zeros, not the keyed hash of all zeros.
    if (this.chunks === 0) return hashToHex(new Uint8Array(32));
    return hashToHex(hmac(this.tree.root(), ZERO_KEY));
  }

  private push(c: Chunk): void {
    this.chunks++;
    this.tree.add(c);
  }
}
