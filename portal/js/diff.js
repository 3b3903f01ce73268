// A unified diff as the agent reported it, shown line by line: additions, removals, hunk
// headers and file headers each get a class (and a +/- that stays in the text, so colour is
// never the only cue). Text nodes only: a diff is whatever the node's files held.

import {h} from './dom.js';

export function diffView(text) {
  const pre = h('pre', {class: 'diff', tabindex: '0', 'aria-label': 'Unified diff'});
  const lines = String(text).replace(/\n$/, '').split('\n');
  for (const line of lines) {
    let cls = 'ctx';
    if (line.startsWith('+++') || line.startsWith('---')) cls = 'file';
    else if (line.startsWith('@@')) cls = 'hunk';
    else if (line.startsWith('+')) cls = 'add';
    else if (line.startsWith('-')) cls = 'del';
    else if (line.startsWith('\\')) cls = 'meta';
    pre.append(h('span', {class: 'dl dl-' + cls}, line), '\n');
  }
  return pre;
}
