package campaign

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// Limits of a providerTemplate.
const (
	// MaxProviderTemplateNameLen is the most characters of its name.
	MaxProviderTemplateNameLen = 512
	// MaxProviderTemplateParams is the most parameters it has.
	MaxProviderTemplateParams = 100
	// MaxProviderTemplateParamLen is the most characters of one
	// parameter as written in the template.
	MaxProviderTemplateParamLen = 1024
)

// providerTemplatePrefix is the JSON path of a providerTemplate.
const providerTemplatePrefix = "typeSpecificConfig.providerTemplate"

// languageTag is a template language as WhatsApp names them: a language
// code, optionally followed by a region or script ("en", "en_US",
// "zh_Hant").
func languageTag() *regexp.Regexp { return regexp.MustCompile(`^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$`) }

// provider returns the description of the provider a service names.
func (s *Service) provider(name string) (accounts.ProviderInfo, bool) {
	if s.providers != nil {
		return s.providers(name)
	}
	if name == messaging.DefaultChatProvider {
		return accounts.HeraldProvider(), true
	}
	return accounts.ProviderInfo{}, false
}

// checkCarried adds to fe why the chat template t cannot go through its
// service cs: a provider no longer known, a providerTemplate on a
// channel other than WhatsApp or malformed, or a message the provider
// does not carry on the service's channel (the provider's own field
// errors). It returns only the errors that are not the template's fault.
func (s *Service) checkCarried(fe *messaging.FieldErrors, cs messaging.ChatService, t *messaging.Template) error {
	p, ok := s.provider(cs.ProviderName())
	if !ok {
		fe.Add("chatServiceId", "chat service %d names provider %q, which this server does not know", cs.ID, cs.ProviderName())
		return nil
	}
	var cfg messaging.ChatConfig
	if t.Config != nil {
		cfg = *t.Config
	}
	if pt := cfg.ProviderTemplate; pt != nil {
		if cs.ChannelName() != messaging.ChatChannelWhatsApp {
			fe.Add(providerTemplatePrefix, "providerTemplate is for WhatsApp services only; chat service %d is on %s", cs.ID, cs.ChannelName())
			return nil
		}
		checkProviderTemplate(fe, pt)
	}
	if p.Carries == nil {
		return nil
	}
	err := p.Carries(cs.ChannelName(), t.MessageType, cfg)
	if err == nil {
		return nil
	}
	var me *messaging.Error
	if !errors.As(err, &me) || me.Code != messaging.Invalid {
		return err
	}
	if len(me.Fields) == 0 {
		fe.Add("messageType", "%s", me.Message)
	}
	for k, v := range me.Fields {
		fe.Add(k, "%s", v)
	}
	return nil
}

// checkDirectCarried returns why a direct chat send, a text message
// (TypeSimpleText, no config), cannot go through service cs: an Invalid
// *messaging.Error naming chatServiceId when the service names a
// provider this server does not know, or one that does not carry the
// message on the service's channel (the provider's reason in the
// message). It returns nil when the message is carried, or the
// provider's own error when it is not the request's fault.
func (s *Service) checkDirectCarried(cs messaging.ChatService) error {
	p, ok := s.provider(cs.ProviderName())
	if !ok {
		return messaging.Invalidf("chatServiceId", "chat service %d names provider %q, which this server does not know",
			cs.ID, cs.ProviderName())
	}
	if p.Carries == nil {
		return nil
	}
	err := p.Carries(cs.ChannelName(), messaging.TypeSimpleText, messaging.ChatConfig{})
	if err == nil {
		return nil
	}
	var me *messaging.Error
	if !errors.As(err, &me) || me.Code != messaging.Invalid {
		return fmt.Errorf("chat service %d: %w", cs.ID, err)
	}
	why := me.Message
	if len(me.Fields) > 0 {
		whys := make([]string, 0, len(me.Fields))
		for _, v := range me.Fields {
			whys = append(whys, v)
		}
		slices.Sort(whys)
		why = strings.Join(whys, "; ")
	}
	return messaging.Invalidf("chatServiceId", "chat service %d (%s on %s) cannot carry a direct text message: %s",
		cs.ID, cs.ProviderName(), cs.ChannelName(), why)
}

// checkProviderTemplate checks the form of a providerTemplate: a name, a
// language tag, and parameters that are texts with {{placeholders}}.
func checkProviderTemplate(fe *messaging.FieldErrors, pt *messaging.ProviderTemplate) {
	p := providerTemplatePrefix + "."
	template.CheckField(fe, p+"name", pt.Name, 1, MaxProviderTemplateNameLen)
	switch {
	case pt.Language == "":
		fe.Add(p+"language", "providerTemplate.language is required")
	case !languageTag().MatchString(pt.Language):
		fe.Add(p+"language", "providerTemplate.language must be a language code such as en or en_US")
	}
	if len(pt.Parameters) > MaxProviderTemplateParams {
		fe.Add(p+"parameters", "providerTemplate has at most %d parameters", MaxProviderTemplateParams)
		return
	}
	for i, v := range pt.Parameters {
		template.CheckField(fe, p+"parameters["+strconv.Itoa(i)+"]", v, 1, MaxProviderTemplateParamLen)
	}
}
