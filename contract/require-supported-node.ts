import { basename, dirname } from 'node:path';
import { refuseUnsupportedNode } from './supported-node.js';

/**
 * Imported first by each entry point (`import '../contract/require-supported-node.js'`): ES
 * modules evaluate their imports in order, so this check runs before any other module of the
 * program loads. The program is named after its folder: control, authz, local-edge.
 */
refuseUnsupportedNode(basename(dirname(process.argv[1] ?? 'platform')));
