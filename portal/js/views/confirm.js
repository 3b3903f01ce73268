// A confirmation as a modal <dialog> (focus kept inside, Escape cancels): resolves true when the
// user confirms. The text is set as text.

import {h} from '../dom.js';

export function confirmDialog({title, text, confirm = 'Confirm', cancel = 'Cancel', danger = true}) {
  return new Promise((resolve) => {
    const yes = h('button', {type: 'button', class: danger ? 'danger' : 'primary', value: 'yes'}, confirm);
    const no = h('button', {type: 'button', value: 'no'}, cancel);
    const dlg = h('dialog', {class: 'confirm', 'aria-labelledby': 'confirm-title', 'aria-describedby': 'confirm-text'},
      h('h2', {id: 'confirm-title'}, title),
      h('p', {id: 'confirm-text'}, text),
      h('div', {class: 'actions'}, no, yes));
    let answer = false;
    yes.addEventListener('click', () => { answer = true; dlg.close(); });
    no.addEventListener('click', () => dlg.close());
    dlg.addEventListener('close', () => { dlg.remove(); resolve(answer); });
    document.body.append(dlg);
    dlg.showModal();
    no.focus();
  });
}
